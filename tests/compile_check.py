"""Compile every kernel variant the dispatcher can emit to PTX for sm_90, without a GPU.

Run as a script or through tests/test_kernels.py: it catches code that the interpreter
accepts but the Triton compiler rejects, on a machine with no GPU.
"""
import triton
from triton.backends.compiler import GPUTarget
from triton.compiler import ASTSource

from multisoftmax import dispatch
from multisoftmax import kernels
from multisoftmax.launch import kernel_meta

TRITON_TY = {"float16": "fp16", "bfloat16": "bf16", "float32": "fp32", "float64": "fp64"}


def compile_launches(launches, dtype: str, target=GPUTarget("cuda", 90, 32), specialize: str | None = None):
    """Compile each Launch (as emitted by dispatch) for `target`; returns the compiled kernels.

    specialize: the argument attributes a launcher gives the compiler. None: none. "jax": every
    pointer 16-byte aligned, as jax_triton.triton_call marks them. "torch": also every integer
    argument divisible by 16 (and those values only) but those the kernel does not specialize
    (do_not_specialize), as Triton's own launcher does for the torch adapter."""
    out = []
    acc = "fp64" if dtype == "float64" else "fp32"
    for launch in launches:
        fn = kernels.get(launch.kernel)
        kw = kernel_meta(launch)  # with the defaults of constexprs the plan leaves out
        opts = {"num_warps": kw.pop("num_warps"), "num_stages": kw.pop("num_stages")}
        if "maxnreg" in kw:  # a register cap (dispatch.COOP_CAP32_REGS, probes)
            opts["maxnreg"] = kw.pop("maxnreg")
        kinds = {"io": TRITON_TY[dtype], "acc": acc, "zeros": "i32", "sync": "i32", "init": "i32"}
        buf_ty = {name: "*" + kinds[d] for name, _, d in (o for l in launches for o in l.outputs)}
        buf_ty.update(where="*i1", where_rows="*i32")  # the where kernels' mask (bool) and row table
        sig, attrs, vals = {}, {}, list(launch.inputs) + list(launch.scalars) + [o[0] for o in launch.outputs]
        for i, (arg_name, v) in enumerate(zip(fn.arg_names, vals)):
            if isinstance(v, str):
                sig[arg_name] = "*" + TRITON_TY[dtype] if v in ("x", "y", "dy") else buf_ty[v]
            else:
                sig[arg_name] = "i32"
            plain = arg_name in fn.do_not_specialize or i in fn.do_not_specialize
            if specialize and (isinstance(v, str) or (specialize == "torch" and v % 16 == 0 and not plain)):
                attrs[(i,)] = [["tt.divisibility", 16]]
        for k in kw:
            sig[k] = "constexpr"
        src = ASTSource(fn=fn, signature=sig, constexprs=kw, attrs=attrs)
        out.append(triton.compile(src, target=target, options=opts))
    return out


if __name__ == "__main__":
    import itertools
    for (M, N), dtype, log, direction in itertools.product(
            [(4096, 128), (64, 3000), (8, 16384), (4096, 65536), (4, 262144)],
            ["float32", "bfloat16", "float64"], [False, True], ["fwd", "bwd"]):
        if direction == "fwd":
            launches = dispatch.plan_forward(M, N, N, N, dtype, log, 132)
        else:
            launches = dispatch.plan_backward(M, N, N, N, N, dtype, log, 132)
        ks = compile_launches(launches, dtype)
        print(M, N, dtype, log, direction, [l.kernel for l in launches],
              [k.metadata.shared for k in ks])
