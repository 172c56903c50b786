"""Timeline of the cooperative forward kernel on the GPU: where a program's time goes (GPU).

    python bench/probe_trace.py [--out DIR] > bench/results/h100/probe_trace.log

Builds a traced copy of `softmax_fwd_coop`: the source of multisoftmax/kernels/softmax.py with
timer reads patched in (no second copy of the kernel to keep in step), one more argument
`trace_ptr`, and per program these stamps, each read once the value it names exists (an
inline-asm read of %globaltimer, in ns, and of %clock64, taking that value as an input so that
it cannot run earlier) and stored at once, at the program's id, so that the copy holds about the
kernel's own registers (held to the end, the stamps took ~20 more a thread: 3 programs an SM
where the kernel fits 4, and a trace of another kernel than the one timed):

    launch   the program's first instruction
    item     its (row, chunk) known (after the ticket's atomic, where it takes one)
    loaded   its chunk's max known: every load of the chunk has landed
    summed   its chunk's sum of exp known: ready to publish
    gathered the row's max known: the wait is over
    end      after its stores were issued

For dispatch's plan of a few long-row shapes (both ops), other chunks for two of them
(VARIANTS) and kernel variants (KERNEL_VARIANTS, patched in the same way), it prints the time
of the kernel itself, of the variant and of the traced copy (do_bench, median, with the
registers a thread of each compiled kernel: compare the traced copy's with the kernel's before
reading its phases), the phase durations (clock64 cycles over each program's ratio of cycles to
globaltimer ns, in us; mean / p10 / p50 / p90), the programs resident on an SM on average, and
the bytes loaded and stored in each 5% of the traced kernel's span (a program's chunk counted
over its load and its post-wait phases), so that a start-up or a drain, a wait or a compute
phase that costs bandwidth shows where it sits. With --out, the raw stamps go to
DIR/traces.npz, one array (programs x 16 int64 words, by program id: 6 globaltimer stamps,
6 clock64 stamps, the SM, the item) a shape, op and variant.
"""

from __future__ import annotations

import argparse
import importlib.util
import os
import sys
import tempfile

import numpy as np
import torch
import triton.testing

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
from multisoftmax import dispatch  # noqa: E402
from multisoftmax.kernels import softmax as kernels_src  # noqa: E402

WORDS = 16  # int64 words a program (by program id): 6 globaltimer stamps, 6 clock64 stamps, smid, item, spare

TIMERS = """

@triton.jit
def _stamp_after(v):
    \"\"\"(%globaltimer, %clock64) read once `v` (a 32-bit scalar) exists.\"\"\"
    v = v.to(tl.int32, bitcast=True)
    g = tl.inline_asm_elementwise("mov.u64 $0, %globaltimer;", "=l,r", [v], dtype=tl.int64, is_pure=False, pack=1)
    c = tl.inline_asm_elementwise("mov.u64 $0, %clock64;", "=l,r", [v], dtype=tl.int64, is_pure=False, pack=1)
    return g, c


@triton.jit
def _smid(v):
    return tl.inline_asm_elementwise("mov.u32 $0, %smid;", "=r,r", [v.to(tl.int32)], dtype=tl.int32,
                                     is_pure=False, pack=1)


@triton.jit
def _prefetch_l2(ptr, nbytes):
    \"\"\"Ask L2 for `nbytes` (a multiple of 16) from `ptr` (16-byte aligned): one bulk prefetch, by thread 0.\"\"\"
    return tl.inline_asm_elementwise(
        "{ .reg .pred p; .reg .u32 t; mov.u32 t, %tid.x; setp.eq.u32 p, t, 0; "
        "@p cp.async.bulk.prefetch.L2.global [$1], $2; mov.u32 $0, 0; }",
        "=r,l,r", [ptr.to(tl.int64, bitcast=True), nbytes], dtype=tl.int32, is_pure=False, pack=1)


@triton.jit
def _put(trace_ptr, k, g, c):
    \"\"\"Stamp k of this program: its globaltimer and clock64 words, stored at once (a program's
    words are at its program id: nothing more held in registers).\"\"\"
    tr = trace_ptr + tl.program_id(0) * WORDS
    tl.store(tr + k, g)
    tl.store(tr + 6 + k, c)
"""

# (anchor in softmax_fwd_coop's source, text inserted before it). Each stamp is stored as soon as
# it is read, so that the traced kernel holds hardly more registers than the kernel itself (stamps
# held to the end took ~20 more a thread: 3 programs an SM where the kernel fits 4).
PATCHES = [
    ("    acc_ty = tl.float64 if ACC_FP64 else tl.float32\n    if TAG:\n        sync = count_ptr",
     "    g0, c0 = _stamp_after(tl.program_id(0))\n"),
    ("    if PACK:\n        N_w, sx_w, sy_w = N, stride_xm, stride_ym",
     "    g1, c1 = _stamp_after(chunk + row.to(tl.int32))\n"
     "    _put(trace_ptr, 0, g0, c0)\n    _put(trace_ptr, 1, g1, c1)\n"
     "    tl.store(trace_ptr + tl.program_id(0) * WORDS + 12, _smid(chunk).to(tl.int64))\n"
     "    tl.store(trace_ptr + tl.program_id(0) * WORDS + 13, row * n_chunks + chunk)\n"),
    ("    if TAG:\n        part_row = sync + 1 + row * 2 * n_chunks",
     "    g2, c2 = _stamp_after(m_own)\n    _put(trace_ptr, 2, g2, c2)\n"),
    ("    if PHASE % 2 == 1:\n        # An all -inf chunk",
     "    g3, c3 = _stamp_after(s_own)\n    _put(trace_ptr, 3, g3, c3)\n    _put(trace_ptr, 4, g3, c3)\n"),
    ("        m_safe = tl.where(m == -float(\"inf\"), 0.0, m)\n        s = tl.sum(s_c * tl.exp(m_c - m_safe), axis=0)",
     "        g4, c4 = _stamp_after(m)\n        _put(trace_ptr, 4, g4, c4)\n"),
]


# Kernel variants tried beside the kernel itself: {name: patches as PATCHES}.
# prefetch: before it takes its ticket, a program asks L2 for the chunk of the item that its
# program id would be (one bulk prefetch, cp.async.bulk.prefetch.L2, by one thread), so that the
# ticket's round trip overlaps a DRAM read that some program of about the same start will use
# (tickets and program ids go out in about the same order). Contiguous rows of whole chunks only
# (N a multiple of CHUNK_N, so that item i's chunk starts i * CHUNK_N values in): the address
# computed from the row and chunk took 72-76 registers a thread (3 programs an SM), this 63.
PREFETCH = ("    acc_ty = tl.float64 if ACC_FP64 else tl.float32\n    if TAG:\n        sync = count_ptr",
            "    if PHASE == 3 and TICKET and not PEEL:\n"
            "        _prefetch_l2(x_ptr + tl.program_id(0).to(tl.int64) * CHUNK_N,"
            " CHUNK_N * (x_ptr.dtype.element_ty.primitive_bitwidth // 8))\n")
# lookahead: once its own chunk has landed (its max known), a program of the launch's first wave
# (item < LOOKAHEAD, about the programs the GPU holds at once: 4 an SM of 132) asks L2 for the chunk
# of item + LOOKAHEAD, which a program starting once the first wave ends will take, so that the
# start's bubble (every resident program summing and waiting at once, no loads in flight) moves
# bytes; lookahead_all: every program does, for item + LOOKAHEAD. Rows of whole chunks, as PREFETCH.
LOOKAHEAD = 528
_LOOKAHEAD = ("    if PEEL:\n        e_offs, e_mask = _coop_edges(xs, N, chunk, n_chunks, VEC)",
              "    if PHASE == 3 and TICKET and not PEEL:\n"
              "        _item = row * n_chunks + chunk\n"
              "        if _item + {W} < M * n_chunks{first}:\n"
              "            _prefetch_l2(x_ptr + (_item + {W}) * CHUNK_N,"
              " CHUNK_N * (x_ptr.dtype.element_ty.primitive_bitwidth // 8))\n")
LOOKAHEAD_FIRST = (_LOOKAHEAD[0], _LOOKAHEAD[1].format(W=LOOKAHEAD, first=f" and _item < {LOOKAHEAD}"))
LOOKAHEAD_ALL = (_LOOKAHEAD[0], _LOOKAHEAD[1].format(W=LOOKAHEAD, first=""))
# pdl, pdl_early: programmatic dependent launch (launched with Triton's launch_pdl=True: bench/probe_ticket.py):
# every program first waits for the kernel before it on the stream to end and its writes to be seen
# (griddepcontrol.wait), so the GPU may take the launch before that kernel ends; pdl_early also lets the
# next such launch start once all of this one's programs have started (griddepcontrol.launch_dependents).
_PDL_AT = "    acc_ty = tl.float64 if ACC_FP64 else tl.float32\n    if TAG:\n        sync = count_ptr"
PDL = (_PDL_AT, "    tl.extra.cuda.gdc_wait()\n")
PDL_EARLY = (_PDL_AT, "    tl.extra.cuda.gdc_wait()\n    tl.extra.cuda.gdc_launch_dependents()\n")
KERNEL_VARIANTS = {"prefetch": [PREFETCH], "lookahead": [LOOKAHEAD_FIRST], "lookahead_all": [LOOKAHEAD_ALL],
                   "pdl": [PDL], "pdl_early": [PDL_EARLY]}


def build(extra=(), trace=True):
    """kernels/softmax.py with softmax_fwd_coop patched by `extra` and, with `trace`, traced (module
    docstring; one more argument, trace_ptr), imported from a temp file."""
    src = open(kernels_src.__file__).read()
    start = src.index("@triton.jit\ndef softmax_fwd_coop(")
    stop = src.index("\n# -----", start)
    fn = src[start:stop].rstrip("\n")
    for anchor, text in list(extra) + (PATCHES if trace else []):
        assert fn.count(anchor) == 1, anchor
        fn = fn.replace(anchor, text + anchor)
    if trace:
        fn = fn.replace("count_ptr, y_ptr,\n", "count_ptr, y_ptr, trace_ptr,\n", 1)
        fn += "\n    g5, c5 = _stamp_after(tl.program_id(0))\n    _put(trace_ptr, 5, g5, c5)\n"
    src = src[:start] + fn + "\n" + src[stop:] + f"\nWORDS = tl.constexpr({WORDS})\n" + TIMERS
    path = os.path.join(tempfile.mkdtemp(), "traced_softmax.py")
    with open(path, "w") as f:
        f.write(src)
    spec = importlib.util.spec_from_file_location("traced_softmax", path)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def buffers(launch, x):
    """The plan's output buffers, fresh (zeros for counters and TAG's words; the "init" argument
    before them: the same tensor)."""
    outs = []
    for name, shape, kind in launch.outputs:
        if kind == "init":
            continue
        if kind in ("zeros", "sync"):
            outs.append(torch.zeros(shape, dtype=torch.int32, device=x.device))
        elif kind == "acc":
            outs.append(torch.empty(shape, dtype=torch.float32, device=x.device))
        else:
            outs.append(torch.empty(shape, dtype=x.dtype, device=x.device))
    return [outs[1]] + outs if launch.outputs[0][2] == "init" else outs


def pct(a):
    return " ".join(f"{v:6.2f}" for v in (a.mean(), *np.percentile(a, (10, 50, 90))))


def analyse(tr, nbytes_chunk, sms, n_chunks):
    """Lines of text from the stamps of one traced launch of `n_chunks` chunks a row."""
    g = tr[:, 0:6].astype(np.float64) / 1e3  # us
    c = tr[:, 6:12].astype(np.float64)
    sm = tr[:, 12]
    span_g = g[:, 5] - g[:, 0]
    cyc_per_us = np.median((c[:, 5] - c[:, 0]) / np.maximum(span_g, 1e-3))
    d = np.diff(c, axis=1) / cyc_per_us  # us, per phase
    t0 = g[:, 0].min()
    span = g[:, 5].max() - t0
    steps = np.diff(np.unique(g[:, 0]))  # few programs may all share one globaltimer reading
    lines = [f"  span {span:7.1f} us (first launch stamp to last end stamp), {len(tr)} programs, "
             f"clock {cyc_per_us / 1e3:.2f} GHz, globaltimer step "
             + (f"{steps[:50].min() * 1e3:.0f} ns" if steps.size else "- (one launch stamp)")]
    for k, name in enumerate(("ticket", "load", "sum", "wait", "combine+store")):
        lines.append(f"  {name:14s} us mean/p10/p50/p90 {pct(d[:, k])}")
    lines.append(f"  lifetime       us mean/p10/p50/p90 {pct((c[:, 5] - c[:, 0]) / cyc_per_us)}")
    resident = ((c[:, 5] - c[:, 0]) / cyc_per_us).sum() / (sms * span)
    lines.append(f"  programs resident an SM on average {resident:.2f}; SMs used {len(np.unique(sm))}")
    # Bytes moved in each 1/B of the span: a chunk's loads spread over [item, loaded], its stores
    # over [gathered, end].
    B = 20
    edges = np.linspace(t0, t0 + span, B + 1)
    moved = np.zeros(B)
    for a, b in ((g[:, 1], g[:, 2]), (g[:, 4], g[:, 5])):
        for i in range(B):
            lo, hi = edges[i], edges[i + 1]
            overlap = np.clip(np.minimum(b, hi) - np.maximum(a, lo), 0, None)
            frac = np.where(b > a, overlap / np.maximum(b - a, 1e-9), ((a >= lo) & (a < hi)).astype(float))
            moved[i] += (frac * nbytes_chunk).sum()
    gbps = moved / (span / B) / 1e3
    lines.append(f"  GB/s per {100 // B}% of the span: " + " ".join(f"{v:4.0f}" for v in gbps))
    mid = slice(B // 10, B - B // 10)
    lines.append(f"  middle 80%: {moved[mid].sum() / (span * 0.8) / 1e3:.0f} GB/s; first end stamp "
                 f"{g[:, 5].min() - t0:.1f} us after the first launch; last launch stamp {t0 + span - g[:, 0].max():.1f} "
                 f"us before the last end")
    phases = []
    for i in range(0, B, 2):
        mid = (edges[i] + edges[i + 1]) / 2
        live = (g[:, 0] <= mid) & (g[:, 5] > mid)
        states = [((g[:, k] <= mid) & (g[:, k + 1] > mid)).sum() for k in range(5)]
        phases.append(f"{live.sum() / sms:4.1f}:" + "/".join(f"{s / sms:.1f}" for s in states))
    lines.append("  programs an SM at every other 5% of the span, all:ticket/load/sum/wait/combine+store")
    lines.append("    " + " ".join(phases))
    return lines + rows(tr, n_chunks)


def rows(tr, n_chunks):
    """What a program waits for: across each row's chunks, the spread of their item stamps (when
    they knew their chunk) and of their summed stamps, whether the row's last summed chunk was a
    late start or a slow one, and how long after the row's last summed stamp a program had the
    row's partials (its gathered stamp): the notification's latency."""
    g = tr[:, 0:6].astype(np.float64) / 1e3
    order = np.argsort(tr[:, 13], kind="stable")  # by item: row-major chunks
    g = g[order].reshape(-1, n_chunks, 6)
    item, summed = g[:, :, 1], g[:, :, 3]
    last = np.argmax(summed, axis=1)
    rank = lambda a: np.argsort(np.argsort(a, axis=1), axis=1)[np.arange(len(a)), last].mean()  # noqa: E731
    seen = g[:, :, 4] - summed.max(axis=1, keepdims=True)
    return [f"  a row's chunks: item stamps spread {pct(item.max(1) - item.min(1))}, summed stamps spread "
            f"{pct(summed.max(1) - summed.min(1))} (us, mean/p10/p50/p90)",
            f"  the row's last summed chunk: rank {rank(item):.1f} of 0..{n_chunks - 1} by item stamp, "
            f"{rank(summed - item):.1f} by its load+sum time",
            f"  gathered - the row's last summed stamp (notification) us mean/p10/p50/p90 {pct(seen)}"]


SHAPES = [("bfloat16", 2048, 65536), ("bfloat16", 512, 262144), ("bfloat16", 128, 1048576),
          ("bfloat16", 2670, 50257), ("float32", 256, 262144)]
# Other chunks (values x warps) for the shapes of VARIANT_SHAPES, each waiting through TAG and
# packed where rows are whole words (at most COOP_TAG_MAX_CHUNKS chunks a row).
VARIANTS = [(32768, 16), (8192, 4)]
VARIANT_SHAPES = [("bfloat16", 512, 262144), ("bfloat16", 128, 1048576)]


def plans(M, N, dtype, log, sms, variants):
    """[(name, plan)]: dispatch's, then each of `variants` that the cooperative kernel takes."""
    import tune
    from unittest import mock
    out = [("dispatch", dispatch.plan_forward(M, N, N, N, dtype, log, sms))]
    for chunk, warps in variants:
        with mock.patch.object(dispatch, "_coop_tag_fwd", lambda *a: {}):
            plan = tune.coop_plan(M, N, dtype, "fwd", sms, chunk, warps, log)
        if plan[0].scalars[-1] <= dispatch.COOP_TAG_MAX_CHUNKS:
            out.append((f"{chunk}x{warps}T", plan))
    return out


def _bench(fn):
    """Median us of `fn` (do_bench) and the compiled kernel's registers a thread."""
    k = fn()
    ms = triton.testing.do_bench(fn, warmup=5, rep=40, return_mode="median")
    return ms * 1e3, getattr(k, "n_regs", -1)


def run(name, plan, x, log, plain, traced, sms):
    """Time `plan` with the kernel itself, with `plain`'s softmax_fwd_coop (twice each, in turn) and
    with `traced`'s; its lines of text and its trace."""
    (l,) = plan
    assert l.kernel == "softmax_fwd_coop", l.kernel
    kw = l.kwargs
    ref = (torch.log_softmax if log else torch.softmax)(x.float(), -1)
    outs = buffers(l, x)
    n_items = l.grid[0]
    trace = torch.zeros(n_items * WORDS, dtype=torch.int64, device="cuda")
    fns = {"kernel": lambda: kernels_src.softmax_fwd_coop[l.grid](x, *l.scalars, *outs, **kw),
           "variant": lambda: plain.softmax_fwd_coop[l.grid](x, *l.scalars, *outs, **kw),
           "traced": lambda: traced.softmax_fwd_coop[l.grid](x, *l.scalars, *outs, trace, **kw)}
    if plain is kernels_src:
        del fns["variant"]
    res, err = {}, 0.0
    for which in list(fns) * 2:
        if which == "traced" and which in res:
            continue
        res.setdefault(which, []).append(_bench(fns[which]))
        err = max(err, (outs[-1].float() - ref).abs().max().item())
    fns["traced"]()
    torch.cuda.synchronize()
    tr = trace.view(n_items, WORDS).cpu().numpy()
    nbytes = 2 * x.numel() * x.element_size()
    flags = ",".join(f"{k.lower()}={kw[k]:d}" for k in ("PACK", "TAG", "PEEL", "TICKET", "LATE_LEAVE"))
    M, N = x.shape
    times = " | ".join(f"{which} r{r[0][1]} " + "/".join(f"{us:.1f}" for us, _ in r)
                       + f" us {nbytes / min(us for us, _ in r) / 1e3:.0f} GB/s" for which, r in res.items())
    lines = [f"{x.dtype} {M}x{N} {'log' if log else 'sm'} {name}: chunk={kw['CHUNK_N']} warps={kw['num_warps']} "
             f"{flags} programs/SM={n_items / sms:.1f} | {times}; max err {err:.1e}"]
    lines += analyse(tr, kw["CHUNK_N"] * x.element_size(), sms, l.scalars[-1])
    return lines, tr


def launch_ways(plan, x, log, traced, sms):
    """The traced copy of `plan` launched three ways, each traced launch the second of two (the
    trace keeps the last launch's stamps): right after an idle GPU (a synchronize before it), right
    after another launch of it on the stream (as eager torch and JAX's chains launch), and the
    second of two launches replayed from a CUDA graph (as the benchmark times small torch calls);
    also after torch's `2 * x` on the same bytes on the stream. Its lines of text: for each way the
    traced launch's span by the globaltimer and analyse()'s lines. bench/probe_overlap.py: the
    kernel runs 1-1.5% longer launched right after another on the stream than the other ways."""
    (l,) = plan
    kw = l.kwargs
    outs = buffers(l, x)
    n_items = l.grid[0]
    trace = torch.zeros(n_items * WORDS, dtype=torch.int64, device="cuda")

    def once():
        traced.softmax_fwd_coop[l.grid](x, *l.scalars, *outs, trace, **kw)

    def idle():
        once()
        torch.cuda.synchronize()
        once()

    def stream():
        once()
        once()

    def after_2x():
        torch.mul(x, 2)
        once()
    from probe_overlap import torch_graph
    replay, keep = torch_graph(lambda a: once(), x, calls=2)
    ways = {"idle": idle, "stream": stream, "after 2*x": after_2x, "graph": replay}
    lines, traces = [], {}
    M, N = x.shape
    for rnd in range(2):
        for name, fn in ways.items():
            torch.cuda.synchronize()
            fn()
            torch.cuda.synchronize()
            tr = trace.view(n_items, WORDS).cpu().numpy().copy()
            traces[f"{name}_{rnd}"] = tr
            lines.append(f"{x.dtype} {M}x{N} {'log' if log else 'sm'} traced, {name}, round {rnd + 1}:")
            lines += analyse(tr, kw["CHUNK_N"] * x.element_size(), sms, l.scalars[-1])
    del keep
    return lines, traces


def main():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--out", default=None)
    p.add_argument("--shapes", default=None, help="dtype:MxN,... (default: SHAPES)")
    p.add_argument("--variants", default=None, help="CHUNKxWARPS,... (default: VARIANTS; 'none': dispatch's only)")
    p.add_argument("--kernels", default="prefetch",
                   help="kernel variants to try beside the kernel (KERNEL_VARIANTS; '' for none)")
    p.add_argument("--ways", action="store_true",
                   help="dispatch's plan only: the traced kernel launched after an idle GPU, right after itself "
                        "on the stream, after torch's 2 * x, and from a CUDA graph (launch_ways)")
    p.add_argument("--from", dest="saved", default=None,
                   help="a traces.npz of an earlier run: analyse it again (no GPU; dispatch's plans at 132 SMs)")
    args = p.parse_args()
    if args.saved:
        return reanalyse(args.saved)
    shapes = SHAPES if not args.shapes else [
        (s.split(":")[0], *map(int, s.split(":")[1].split("x"))) for s in args.shapes.split(",")]
    variants = VARIANTS if args.variants is None else [
        tuple(map(int, v.split("x"))) for v in args.variants.split(",") if v != "none"]
    modules = {"": (kernels_src, build())}
    modules.update({k: (build(KERNEL_VARIANTS[k], trace=False), build(KERNEL_VARIANTS[k]))
                    for k in args.kernels.split(",") if k})
    traces = {}
    sms = torch.cuda.get_device_properties(0).multi_processor_count
    print(f"{torch.cuda.get_device_name()}  SMs {sms}", flush=True)
    for dtype, M, N in shapes:
        x = torch.randn(M, N, device="cuda", dtype=getattr(torch, dtype))
        for log in (False, True):
            todo = variants if args.variants or (dtype, M, N) in VARIANT_SHAPES else []
            if args.ways:
                lines, trs = launch_ways(plans(M, N, dtype, log, sms, [])[0][1], x, log, modules[""][1], sms)
                print("\n".join(lines), flush=True)
                if args.out:
                    traces.update({f"{dtype}_{M}x{N}_{'log' if log else 'sm'}_dispatch+{k}": v for k, v in trs.items()})
                    os.makedirs(args.out, exist_ok=True)
                    np.savez_compressed(os.path.join(args.out, "traces.npz"), **traces)
                continue
            for name, plan in plans(M, N, dtype, log, sms, todo):
                for kname, (plain, traced) in modules.items():
                    kw = plan[0].kwargs
                    if kname and (N % kw["CHUNK_N"] or not kw["TICKET"] or name != "dispatch"):
                        continue  # prefetch: rows of whole chunks (see PREFETCH)
                    label = name + (f"+{kname}" if kname else "")
                    lines, tr = run(label, plan, x, log, plain, traced, sms)
                    print("\n".join(lines), flush=True)
                    if args.out:  # all traces in one file, rewritten after each
                        traces[f"{dtype}_{M}x{N}_{'log' if log else 'sm'}_{label}"] = tr
                        os.makedirs(args.out, exist_ok=True)
                        np.savez_compressed(os.path.join(args.out, "traces.npz"), **traces)
        del x
        torch.cuda.empty_cache()


def reanalyse(path, sms=132):
    """The analysis of every trace in a saved traces.npz (keys dtype_MxN_op_variant), the chunks
    a row recomputed from dispatch's plans for `sms` SMs (the run's code must plan alike)."""
    saved = np.load(path)
    for key in saved.files:
        dtype, shape, op, name = key.split("_", 3)
        M, N = map(int, shape.split("x"))
        base = name.split("+")[0]  # the plan's name: dispatch or CHUNKxWARPST, then +kernel variant
        variants = [] if base == "dispatch" else [tuple(map(int, base[:-1].split("x")))]
        ((l,),) = [p for n, p in plans(M, N, dtype, op == "log", sms, variants) if n == base]
        itemsize = 2 if dtype in ("bfloat16", "float16") else 4
        print(f"{key}: chunk={l.kwargs['CHUNK_N']} warps={l.kwargs['num_warps']} n_chunks={l.scalars[-1]}")
        print("\n".join(analyse(saved[key], l.kwargs["CHUNK_N"] * itemsize, sms, l.scalars[-1])), flush=True)


if __name__ == "__main__":
    main()
