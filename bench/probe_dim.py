"""Softmax over a dim other than the last (NCHW over C, (B, N, T) over N, a 2-D dim 0): GPU time by
the benchmark's clock (bench/timing.py: kernels and copies summed, CUDA graph for torch, a jitted
chain for JAX), GB/s of the fewest bytes (forward: x and y; backward: y, dy and dx).

Impls: multisoftmax's torch adapter (`ms-torch`: the columns kernels since they came; before, dim
moved last and x copied into rows), torch.softmax, torch.compile(torch.softmax) (compiled per shape,
dynamic=False); with JAX, multisoftmax.jax (`ms-jax`) and jax.nn.softmax, jitted. Backward:
torch's `_softmax_backward_data` and ours as autograd runs it (`_columns_backward` on y, dy),
JAX's pullbacks from a forward outside the timed function. Each result is checked against
float64 (torch.softmax on the same x in float64).

    python bench/probe_dim.py --dtypes float32 --out bench/results/h100/dim_float32   # JSON; lines on stdout
    python bench/probe_dim.py --plot bench/results/h100/dim_*.json --png bench/results/h100/dim.png
"""
from __future__ import annotations

import argparse
import datetime
import json
import math
import os
import sys

import torch

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
import timing  # noqa: E402
import multisoftmax.torch as mst  # noqa: E402

# (shape, dim): segmentation logits (N, C, H, W) over C, (B, N, T) middle axes, a 2-D dim 0, a small
# inner size (T = 4).
CASES = [((16, 21, 512, 512), 1), ((8, 150, 256, 256), 1), ((32, 1000, 14, 14), 1), ((64, 4096, 64), 1),
         ((8192, 8192), 0), ((1024, 32, 2048), 1), ((65536, 256, 4), 1)]
TOL = {torch.float32: 1e-4, torch.bfloat16: 3.2e-2, torch.float16: 4e-3}
COLORS = {"ms-torch": "C0", "torch": "C1", "compile": "C2", "ms-jax": "C3", "xla": "C4"}


def _torch_impls(dim):
    compiled = torch.compile(lambda x: torch.softmax(x, dim), dynamic=False)
    fwd = {"ms-torch": lambda x: mst.softmax(x, dim), "torch": lambda x: torch.softmax(x, dim),
           "compile": compiled}

    def ours_bwd(y, dy):  # what autograd's backward of mst.softmax(x, dim) runs
        B, N = math.prod(y.shape[:dim]), y.shape[dim]
        return mst._columns_backward(y.view(B, N, -1), dy.view(B, N, -1), False).view(y.shape)

    bwd = {"ms-torch": ours_bwd, "torch": lambda y, dy: torch._softmax_backward_data(dy, y, dim, y.dtype)}
    return fwd, bwd


def run(dtypes, out):
    l2 = torch.cuda.get_device_properties(0).L2_cache_size
    copy = timing.copy_bandwidth(True)
    try:
        import jax
        import jax.numpy as jnp
        import multisoftmax.jax as msj
        torch._dynamo.config.recompile_limit = 64
    except ImportError:
        jax = None
    head = f"{torch.cuda.get_device_name()}  copy {copy:.0f} GB/s"
    print(head, flush=True)
    records = []
    for dtype in dtypes:
        for shape, dim in CASES:
            g = torch.Generator(device="cuda").manual_seed(0)
            x = torch.randn(shape, device="cuda", dtype=dtype, generator=g) * 3
            dy = torch.randn(shape, device="cuda", dtype=dtype, generator=g)
            ref = torch.softmax(x.double(), dim)
            ref_dx = ref * (dy.double() - (dy.double() * ref).sum(dim, keepdim=True))
            nb = 2 * x.numel() * x.element_size()
            fwd, bwd = _torch_impls(dim)
            line = []
            for name, fn in fwd.items():
                err = ((fn(x).double() - ref).abs().max() / ref.abs().max()).item()
                us, method = timing.torch_time(fn, (x,), nb, cuda=True, graphable=True, l2_bytes=l2)
                records.append(dict(impl=name, dtype=str(dtype)[6:], shape=shape, dim=dim, dir="fwd", us=us,
                                    gbps=nb / us / 1e3, max_rel_err=err, method=method))
                line.append(f"{name} {nb / us / 1e3:5.0f}{'(!)' if err > TOL[dtype] else ''}")
            y = torch.softmax(x, dim)
            for name, fn in bwd.items():
                got = fn(y, dy).double()
                err = ((got - ref_dx).abs().max() / ref_dx.abs().max()).item()
                us, method = timing.torch_time(fn, (y, dy), 1.5 * nb, cuda=True, graphable=True, l2_bytes=l2)
                records.append(dict(impl=name, dtype=str(dtype)[6:], shape=shape, dim=dim, dir="bwd", us=us,
                                    gbps=1.5 * nb / us / 1e3, max_rel_err=err, method=method))
                line.append(f"bwd {name} {1.5 * nb / us / 1e3:5.0f}{'(!)' if err > TOL[dtype] else ''}")
            if jax is not None:
                jdt = {torch.float32: jnp.float32, torch.bfloat16: jnp.bfloat16}[dtype]
                xj = jnp.asarray(x.float().cpu().numpy()).astype(jdt)
                dyj = jnp.asarray(dy.float().cpu().numpy()).astype(jdt)
                refn = ref.cpu().numpy()
                for name, f in (("ms-jax", msj.softmax), ("xla", jax.nn.softmax)):
                    o, us, _, method = timing.jax_time(lambda a, f=f: f(a, dim), (xj,), nb, gpu=True, l2_bytes=l2)
                    err = float(abs(o.astype(jnp.float64) - refn).max() / abs(refn).max())
                    records.append(dict(impl=name, dtype=str(dtype)[6:], shape=shape, dim=dim, dir="fwd", us=us,
                                        gbps=nb / us / 1e3, max_rel_err=err, method=method))
                    line.append(f"{name} {nb / us / 1e3:5.0f}{'(!)' if err > TOL[dtype] else ''}")
                    _, pull = jax.vjp(lambda a, f=f: f(a, dim), xj)
                    o, us, _, method = timing.jax_time(lambda d, pull=pull: pull(d)[0], (dyj,), 1.5 * nb, gpu=True,
                                                       l2_bytes=l2)
                    refd = ref_dx.cpu().numpy()
                    err = float(abs(o.astype(jnp.float64) - refd).max() / abs(refd).max())
                    records.append(dict(impl=name, dtype=str(dtype)[6:], shape=shape, dim=dim, dir="bwd", us=us,
                                        gbps=1.5 * nb / us / 1e3, max_rel_err=err, method=method))
                    line.append(f"bwd {name} {1.5 * nb / us / 1e3:5.0f}{'(!)' if err > TOL[dtype] else ''}")
                del xj, dyj
            print(f"{str(dtype)[6:]:8s} {'x'.join(map(str, shape)):16s} dim={dim} GB/s | " + " | ".join(line), flush=True)
            del x, dy, y, ref, ref_dx
            torch.cuda.empty_cache()
            if out:  # after every case: a run cut short keeps what it measured
                os.makedirs(os.path.dirname(out) or ".", exist_ok=True)
                meta = dict(device=torch.cuda.get_device_name(),
                            date=datetime.datetime.now(datetime.timezone.utc).isoformat(), copy_gbps=copy,
                            torch=torch.__version__, triton=__import__("triton").__version__,
                            jax=getattr(jax, "__version__", None))
                with open(out + ".json", "w") as f:
                    json.dump(dict(meta=meta, records=records), f, indent=1)


def plot(paths, png):
    """Bars of GB/s per case and impl, forward and backward, one panel per dtype and direction, the
    copy bandwidth of each run as a line, from the JSONs `run` wrote."""
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    runs = [json.load(open(p)) for p in paths]
    dtypes = [r["records"][0]["dtype"] for r in runs]
    fig, axes = plt.subplots(len(runs), 2, figsize=(16, 4.2 * len(runs)), squeeze=False)
    for row, (run_, dtype) in enumerate(zip(runs, dtypes)):
        for col, direction in enumerate(("fwd", "bwd")):
            ax = axes[row][col]
            recs = [r for r in run_["records"] if r["dir"] == direction]
            cases = list(dict.fromkeys(("x".join(map(str, r["shape"])) + f" d{r['dim']}") for r in recs))
            impls = list(dict.fromkeys(r["impl"] for r in recs))
            width = 0.8 / len(impls)
            for i, impl in enumerate(impls):
                vals = {("x".join(map(str, r["shape"])) + f" d{r['dim']}"): r["gbps"] for r in recs if r["impl"] == impl}
                ax.bar([c + i * width for c in range(len(cases))], [vals.get(c, 0) for c in cases], width, label=impl,
                       color=COLORS.get(impl))
            ax.axhline(run_["meta"]["copy_gbps"], color="k", ls="--", lw=1, label="copy")
            ax.set_xticks([c + 0.4 - width / 2 for c in range(len(cases))], cases, rotation=20, fontsize=8)
            ax.set_ylabel("GB/s")
            ax.set_title(f"softmax over a middle dim, {dtype} {direction} ({run_['meta']['device']}, "
                         f"{run_['meta']['date'][:16]} UTC)", fontsize=9)
            ax.legend(fontsize=7, ncol=3)
    fig.tight_layout()
    fig.savefig(png, dpi=90)


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--out", default=None, help="path prefix of the JSON written (OUT.json)")
    ap.add_argument("--dtypes", default="float32,bfloat16")
    ap.add_argument("--plot", nargs="+", metavar="JSON", help="no run: plot these runs' JSONs into --png")
    ap.add_argument("--png", default="dim.png")
    args = ap.parse_args()
    if args.plot:
        return plot(args.plot, args.png)
    run([getattr(torch, d) for d in args.dtypes.split(",")], args.out)


if __name__ == "__main__":
    main()
