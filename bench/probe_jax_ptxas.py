"""Probe (GPU): does the JAX adapter's machine code differ from the torch adapter's for the same plan?

The JAX adapter runs the ~195 us forwards of 1048576-value rows 1-3 us longer than the torch
adapter with the same plan (bench/results/h100/probe_jax_1m_lag.log, run_f4c822d/). Triton turns
the torch adapter's PTX into machine code with its own ptxas; jaxlib turns the PTX jax-triton
hands it into machine code itself (jaxlib/gpu/triton_kernels.cc: XLA's CompileGpuAsm, which uses
the nvPTXCompiler library linked into the plugin when it has one, else a ptxas it finds, with
`-arch=sm_90a --warn-on-spills`). This prints, for bf16 128 x 1048576 softmax and float32
64 x 1048576 log_softmax forwards:
- the torch adapter's kernels: registers and spills (Triton's CompiledKernel);
- whether the PTX the JAX adapter hands jaxlib (jax-triton's JAX_TRITON_DUMP_DIR) is the torch
  adapter's, debug lines aside;
- what jaxlib's compiler said (its log at TF_CPP_VMODULE=ptx_compiler_impl=2, which adds `-v`:
  registers), the nvPTXCompiler/ptxas versions the plugin names, and the registers every ptxas on
  the machine gives the JAX adapter's PTX;
- then, by the benchmark's clock (bench/timing.py), twice each: the torch adapter in a CUDA graph
  (as the benchmark times it), the torch adapter launched call by call on the stream (as a jitted
  JAX program launches its kernels), and the JAX adapter's jitted chain: whether the lag goes with
  the adapter or with how the kernels are launched; and the same for `2 * x` (torch's elementwise
  kernel, and XLA's): whether it holds for any kernel.

    TF_CPP_MIN_LOG_LEVEL=0 TF_CPP_VMODULE=ptx_compiler_impl=2,cuda_asm_compiler=3,subprocess_compilation=2 \\
        python bench/probe_jax_ptxas.py
"""

from __future__ import annotations

import glob
import os
import re
import subprocess
import sys
import tempfile

DUMP = tempfile.mkdtemp(prefix="jax-triton-dump-")
os.environ["JAX_TRITON_DUMP_DIR"] = DUMP  # read when jax_triton is imported
os.environ.setdefault("XLA_PYTHON_CLIENT_PREALLOCATE", "false")
sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
import jax  # noqa: E402
import jax.numpy as jnp  # noqa: E402
import torch  # noqa: E402

import multisoftmax.jax as mj  # noqa: E402
import multisoftmax.torch as mt  # noqa: E402
from multisoftmax import launch  # noqa: E402

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import timing  # noqa: E402

CASES = [("bfloat16", 128, 1048576, False), ("float32", 64, 1048576, True)]
DEBUG = re.compile(r"^\s*(\.loc|\.file|//|\$L__func_\w+:|\$L__tmp\w*:|$)")  # line info and its labels


def code_lines(ptx: str) -> list:
    """The PTX without line info, comments and the debug sections."""
    ptx = ptx.split(".section\t.debug", 1)[0].split(".section .debug", 1)[0]
    return [ln.strip() for ln in ptx.splitlines() if not DEBUG.match(ln)]


def ptxas_binaries() -> list:
    import triton

    found = glob.glob("/usr/local/cuda*/bin/ptxas")
    found += glob.glob(os.path.join(os.path.dirname(triton.__file__), "backends/nvidia/bin/ptxas"))
    for site in sys.path:
        found += glob.glob(os.path.join(site, "nvidia", "*", "bin", "ptxas"))
    return sorted({os.path.realpath(p) for p in found if os.access(p, os.X_OK)})


def version(ptxas: str) -> str:
    out = subprocess.run([ptxas, "--version"], capture_output=True, text=True).stdout.strip()
    return out.splitlines()[-1] if out else "?"


def plugin_versions() -> dict:
    """Version strings of CUDA's compiler found in the bytes of the JAX CUDA plugin's libraries."""
    pat = re.compile(rb"(?:Cuda compilation tools, release [0-9.]+, V[0-9.]+|nvPTXCompiler[^\0]{0,40})")
    out = {}
    for site in sys.path:
        for lib in glob.glob(os.path.join(site, "jax_cuda*_plugin", "*.so")) + glob.glob(
                os.path.join(site, "jaxlib", "cuda", "*.so")):
            with open(lib, "rb") as f:
                data = f.read()
            hits = sorted({m.group(0).decode(errors="replace") for m in pat.finditer(data)})[:6]
            if hits:
                out[os.path.basename(lib)] = hits
    return out


def main():
    print(f"{torch.cuda.get_device_name()}  jax {jax.__version__}  torch {torch.__version__}", flush=True)
    torch_ptx = {}
    for dtype, M, N, log in CASES:
        x = torch.randn(M, N, device="cuda", dtype=getattr(torch, dtype)) * 2
        launch._COMPILED.clear()
        (mt.log_softmax if log else mt.softmax)(x, dim=-1)
        torch.cuda.synchronize()
        for _, compiled, grid, *_ in launch._COMPILED.values():
            name = compiled.name if hasattr(compiled, "name") else compiled.metadata.name
            print(f"{dtype} {M}x{N} {'log_softmax' if log else 'softmax'}: torch adapter {name} grid {grid}: "
                  f"{compiled.n_regs} registers, {compiled.n_spills} spills", flush=True)
            torch_ptx[(dtype, log, name)] = compiled.asm["ptx"]
        xj = jnp.asarray(x.float().cpu().numpy()).astype(dtype)
        jax.block_until_ready((mj.log_softmax if log else mj.softmax)(xj, -1))
        del x, xj
        torch.cuda.empty_cache()
    dumped = {}
    for path in glob.glob(os.path.join(DUMP, "*", "*.ptx")):
        dumped.setdefault(os.path.basename(path)[:-4], []).append(open(path).read())
    print(f"jax-triton dumped: {sorted((k, len(v)) for k, v in dumped.items())}", flush=True)
    for (dtype, log, name), ptx in torch_ptx.items():
        mine = code_lines(ptx)
        same = [code_lines(p) == mine for p in dumped.get(name, [])]
        print(f"{dtype} {'log_softmax' if log else 'softmax'} {name}: the JAX adapter's PTX equals the torch "
              f"adapter's, debug lines aside: {same} ({len(mine)} lines)", flush=True)
        if dumped.get(name) and not any(same):
            theirs = code_lines(dumped[name][0])
            diff = [(a, b) for a, b in zip(mine, theirs) if a != b][:8]
            print(f"  first differences (torch, jax): {diff}", flush=True)
    print(f"plugin's compiler versions: {plugin_versions()}", flush=True)
    with tempfile.TemporaryDirectory() as tmp:
        for name, texts in sorted(dumped.items()):
            for i, text in enumerate(texts):
                src = os.path.join(tmp, f"{name}_{i}.ptx")
                with open(src, "w") as f:
                    f.write(text)
                for ptxas in ptxas_binaries():
                    r = subprocess.run([ptxas, "-arch=sm_90a", "--warn-on-spills", "-v", src, "-o", src + ".cubin"],
                                       capture_output=True, text=True)
                    used = re.findall(r"Used \d+ registers[^\n]*", r.stderr) or [r.stderr.strip()[-200:]]
                    print(f"  {name} #{i} (JAX PTX{', .maxnreg 64' if '.maxnreg 64' in text else ''}) by {ptxas} "
                          f"({version(ptxas)}): {used[0]}", flush=True)
    l2 = torch.cuda.get_device_properties(0).L2_cache_size
    for dtype, M, N, log in CASES:
        x = torch.randn(M, N, device="cuda", dtype=getattr(torch, dtype)) * 2
        nbytes = 2 * x.numel() * x.element_size()
        xj = jnp.asarray(x.float().cpu().numpy()).astype(dtype)
        tf, jf = (mt.log_softmax, mj.log_softmax) if log else (mt.softmax, mj.softmax)
        for rnd in range(2):
            graph = timing.torch_time(lambda a: tf(a, dim=-1), (x,), nbytes, cuda=True, graphable=True, l2_bytes=l2)
            stream = timing.torch_time(lambda a: tf(a, dim=-1), (x,), nbytes, cuda=True, graphable=False,
                                       l2_bytes=l2)
            chain = timing.jax_time(lambda a: jf(a, -1), (xj,), nbytes, gpu=True, l2_bytes=l2)
            print(f"{dtype} {M}x{N} {'log_softmax' if log else 'softmax'} round {rnd + 1}: torch adapter in a "
                  f"graph {graph[0]:.1f} us, on the stream {stream[0]:.1f} us ({stream[1]}); JAX adapter "
                  f"{chain[1]:.1f} us ({chain[3]})", flush=True)
        for rnd in range(2):  # an elementwise kernel of torch's and XLA's own on the same bytes
            graph = timing.torch_time(lambda a: a * 2, (x,), nbytes, cuda=True, graphable=True, l2_bytes=l2)
            stream = timing.torch_time(lambda a: a * 2, (x,), nbytes, cuda=True, graphable=False, l2_bytes=l2)
            chain = timing.jax_time(lambda a: a * 2, (xj,), nbytes, gpu=True, l2_bytes=l2)
            print(f"{dtype} {M}x{N} 2 * x round {rnd + 1}: torch in a graph {graph[0]:.1f} us, on the stream "
                  f"{stream[0]:.1f} us; XLA {chain[1]:.1f} us", flush=True)
        del x, xj
        torch.cuda.empty_cache()


if __name__ == "__main__":
    main()
