"""multisoftmax.torch: torch.softmax's semantics, autograd, custom-op checks, torch.compile."""

import numpy as np
import pytest
import torch

import multisoftmax.torch as mt
import reference64 as ref

DTYPES = [torch.float32, torch.bfloat16, torch.float16, torch.float64]
NAMES = {torch.float32: "float32", torch.bfloat16: "bfloat16", torch.float16: "float16",
         torch.float64: "float64"}
OPS = [(mt.softmax, torch.softmax, False), (mt.log_softmax, torch.log_softmax, True)]
OP_IDS = ["softmax", "log_softmax"]


def randn(*shape, dtype=torch.float32, device="cpu", seed=0, scale=3.0):
    g = torch.Generator().manual_seed(seed)
    return (torch.randn(tuple(shape), generator=g, dtype=torch.float64) * scale).to(dtype).to(device)


@pytest.mark.parametrize("ops", OPS, ids=OP_IDS)
@pytest.mark.parametrize("dtype", DTYPES, ids=[NAMES[d] for d in DTYPES])
@pytest.mark.parametrize("shape,dim", [((7,), 0), ((4, 33), -1), ((3, 5, 6), 0), ((3, 5, 6), 1),
                                       ((3, 5, 6), -1), ((2, 1, 3, 9), 2), ((), 0), ((), -1)])
def test_matches_float64_reference(torch_device, ops, dtype, shape, dim):
    ours, _, log = ops
    x = randn(*shape, dtype=dtype, device=torch_device, seed=len(shape) * 10 + dim)
    x_before = x.clone()
    y = ours(x, dim)
    assert y.shape == x.shape and y.dtype == dtype and y.device == x.device
    ref.assert_close(y.double().cpu(), ref.softmax(x.double().cpu().numpy(), dim if x.dim() else None, log),
                     NAMES[dtype], f"{shape} dim={dim}")
    assert torch.equal(x, x_before), "the input was modified"


@pytest.mark.parametrize("ops", OPS, ids=OP_IDS)
def test_non_contiguous_and_expanded(torch_device, ops):
    ours, theirs, _ = ops
    base = randn(6, 40, device=torch_device, seed=1)
    views = {
        "transposed": base.t(),
        "column-sliced": base[:, ::3],
        "row-sliced": base[::2, 5:30],
        "expanded": randn(1, 17, device=torch_device, seed=2).expand(5, 17),
        "expanded-dim": randn(4, 1, device=torch_device, seed=3).expand(4, 9),
    }
    for name, x in views.items():
        for dim in range(x.dim()):
            ref.assert_close(ours(x, dim).cpu(), theirs(x.double(), dim).cpu(), "float32", f"{name} dim={dim}")


@pytest.mark.parametrize("dtype", [torch.bfloat16, torch.float16])
def test_16bit_view_off_a_word_boundary(torch_device, dtype):
    """A 16-bit view one element into its storage (not 4-byte aligned) is copied before the
    kernels, which may load two values as one 32-bit word (PACK: on the GPU a misaligned access
    otherwise); forward and backward right, the input unmodified; float32 views are not copied."""
    x = randn(4 * 96 + 1, dtype=dtype, device=torch_device, seed=5)[1:].view(4, 96)
    assert x.data_ptr() % 4 == 2
    xr = mt._row_major(x)
    assert xr is not x and xr.data_ptr() % 4 == 0 and torch.equal(xr, x)
    x32 = randn(4 * 96 + 1, device=torch_device, seed=6)[1:].view(4, 96)
    assert mt._row_major(x32) is x32
    x_before = x.clone()
    for log in (False, True):
        y = torch.ops.multisoftmax.softmax_fwd(x, log)
        ref.assert_close(y.double().cpu(), ref.softmax(x.double().cpu().numpy(), -1, log), NAMES[dtype], "fwd")
        dx = torch.ops.multisoftmax.softmax_bwd(y, x, log)  # dy: the misaligned view
        expected = ref.softmax_backward(y.double().cpu().numpy(), x.double().cpu().numpy(), log=log)
        ref.assert_close(dx.double().cpu(), expected, NAMES[dtype], "bwd", scale_atol=True)
    assert torch.equal(x, x_before)


@pytest.mark.parametrize("ops", OPS, ids=OP_IDS)
def test_special_values_match_torch(torch_device, ops):
    ours, theirs, _ = ops
    x = randn(7, 9, device=torch_device, seed=4)
    x[0] = -float("inf")
    x[1, 3] = float("inf")
    x[2, 5] = float("nan")
    x[3, :4] = -float("inf")
    x[4] = 3e38
    x[5] = torch.tensor([3e38, -3e38] * 4 + [0.0])
    got, expected = ours(x), theirs(x.double(), -1).float()  # exact, rounded to float32
    assert torch.equal(torch.isnan(got), torch.isnan(expected))
    ref.assert_close(got.cpu(), expected.cpu(), "float32")


@pytest.mark.parametrize("dtype", [torch.float16, torch.bfloat16])
def test_half_limits(torch_device, dtype):
    big = torch.finfo(dtype).max
    x = torch.tensor([[big, -big, 0.0, big * 0.5], [-big, -big, -big, -big * 0.99]], dtype=dtype,
                     device=torch_device)
    for ours, theirs, log in OPS:
        # The exact result rounded to the dtype: log_softmax of -max - max is -inf in 16 bits.
        expected = torch.from_numpy(ref.softmax(x.double().cpu().numpy(), -1, log)).to(dtype).double()
        ref.assert_close(ours(x).double().cpu(), expected, NAMES[dtype])


def test_empty_and_n1(torch_device):
    for shape, dim in [((0, 5), 1), ((5, 0), 1), ((0,), 0), ((3, 0, 2), 0)]:
        x = torch.empty(shape, device=torch_device)
        assert mt.softmax(x, dim).shape == x.shape
    x = randn(5, 1, device=torch_device)
    assert torch.equal(mt.softmax(x).cpu(), torch.ones(5, 1))
    assert torch.equal(mt.log_softmax(x).cpu(), torch.zeros(5, 1))


def test_dtype_argument_and_integer_input(torch_device):
    x = torch.arange(12, device=torch_device).reshape(3, 4)
    with pytest.raises(TypeError, match=r"x has dtype torch.int64.*dtype=torch.float32"):
        mt.softmax(x)
    y = mt.softmax(x, 1, dtype=torch.float64)
    assert y.dtype == torch.float64
    ref.assert_close(y.cpu(), torch.softmax(x.double(), 1).cpu(), "float64")
    xh = randn(3, 4, dtype=torch.float16, device=torch_device)
    assert mt.log_softmax(xh, dtype=torch.float32).dtype == torch.float32
    with pytest.raises(TypeError, match="dtype=torch.int32 is not supported"):
        mt.softmax(xh, dtype=torch.int32)


def test_bad_arguments(torch_device):
    x = randn(3, 4, device=torch_device)
    with pytest.raises(IndexError, match=r"dim=2 is out of range .* \[-2, 1\]"):
        mt.softmax(x, 2)
    with pytest.raises(IndexError, match="dim=-3"):
        mt.log_softmax(x, -3)
    with pytest.raises(TypeError, match="dim must be an int"):
        mt.softmax(x, 1.0)
    with pytest.raises(TypeError, match="must be a torch.Tensor"):
        mt.softmax(np.ones(3))
    with pytest.raises(TypeError, match="complex"):
        mt.softmax(torch.ones(3, dtype=torch.complex64, device=torch_device))
    with pytest.raises(ValueError, match="dy"):
        torch.ops.multisoftmax.softmax_bwd(x, randn(3, 5, device=torch_device), False)
    with pytest.raises(ValueError, match="must be 2-D"):
        torch.ops.multisoftmax.softmax_fwd(randn(3, device=torch_device), False)


def test_gradcheck_float64(torch_device):
    x = randn(4, 37, dtype=torch.float64, device=torch_device, seed=7).requires_grad_()
    for ours, _, _ in OPS:
        for dim in (0, 1):
            assert torch.autograd.gradcheck(lambda t: ours(t, dim), (x,))
            assert torch.autograd.gradgradcheck(lambda t: ours(t, dim), (x,))


def test_gradcheck_forward_mode_and_batched(torch_device):
    """Forward-mode AD (dual tensors), batched gradients (the in-core vmap gradcheck uses) and
    forward-over-reverse, through the eager autograd path (_EagerSoftmax)."""
    x = randn(3, 6, dtype=torch.float64, device=torch_device, seed=17).requires_grad_()
    for ours, _, _ in OPS:
        assert torch.autograd.gradcheck(lambda t: ours(t, 0), (x,), check_forward_ad=True,
                                        check_batched_grad=True, check_batched_forward_grad=True)
        assert torch.autograd.gradgradcheck(lambda t: ours(t, 1), (x,), check_fwd_over_rev=True,
                                            check_batched_grad=True)


@pytest.mark.parametrize("ops", OPS, ids=OP_IDS)
def test_torch_func_transforms(torch_device, ops):
    """torch.func.grad, vmap (both argument layouts), jacrev, jacfwd and hessian agree with
    torch's own softmax in float64."""
    ours, native, _ = ops
    x = randn(4, 7, dtype=torch.float64, device=torch_device, seed=18)
    w = randn(7, dtype=torch.float64, device=torch_device, seed=19)

    def loss(f):
        return lambda t: (f(t, -1) * w).sum()

    for transform in (torch.func.grad, torch.func.hessian):
        ref.assert_close(transform(loss(ours))(x).cpu(), transform(loss(native))(x).cpu(), "float64")
    for transform in (torch.func.jacrev, torch.func.jacfwd):
        ref.assert_close(transform(lambda t: ours(t, 0))(x).cpu(), transform(lambda t: native(t, 0))(x).cpu(),
                         "float64")
    for in_dims in (0, 1):
        ref.assert_close(torch.vmap(lambda t: ours(t, 0), in_dims=in_dims)(x).cpu(),
                         torch.vmap(lambda t: native(t, 0), in_dims=in_dims)(x).cpu(), "float64")
    y, vjp = torch.func.vjp(lambda t: ours(t, 1), x)
    dys = randn(3, 4, 7, dtype=torch.float64, device=torch_device, seed=20)
    _, vjp_native = torch.func.vjp(lambda t: native(t, 1), x)
    ref.assert_close(torch.vmap(vjp)(dys)[0].cpu(), torch.vmap(vjp_native)(dys)[0].cpu(), "float64")


def test_eager_autograd_path_saves_y_and_leaves_x(torch_device):
    """Eager calls with autograd record one node (not the custom op's); x is left untouched."""
    x = randn(5, 9, device=torch_device, seed=21).requires_grad_()
    before = x.detach().clone()
    y = mt.softmax(x)
    assert type(y.grad_fn).__name__ == "_EagerSoftmaxBackward"  # the Function, not the op
    dy = randn(5, 9, device=torch_device, seed=22)
    (dx,) = torch.autograd.grad(y, x, dy)
    assert torch.equal(x.detach(), before)
    expected = ref.softmax_backward(y.detach().double().cpu().numpy(), dy.double().cpu().numpy(), 1, False)
    ref.assert_close(dx.double().cpu(), expected, "float32", scale_atol=True)


@pytest.mark.parametrize("ops", OPS, ids=OP_IDS)
@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16])
def test_backward_matches_reference(torch_device, ops, dtype):
    ours, _, log = ops
    x = randn(5, 3, 50, dtype=dtype, device=torch_device, seed=8).requires_grad_()
    dy = randn(5, 3, 50, dtype=dtype, device=torch_device, seed=9)
    y = ours(x, 1)
    (dx,) = torch.autograd.grad(y, x, dy)
    expected = ref.softmax_backward(y.detach().double().cpu().numpy(), dy.double().cpu().numpy(), 1, log)
    ref.assert_close(dx.double().cpu(), expected, NAMES[dtype], scale_atol=True)


def test_opcheck(torch_device):
    x = randn(5, 33, dtype=torch.float64, device=torch_device, seed=10)
    for log in (False, True):
        torch.library.opcheck(torch.ops.multisoftmax.softmax_fwd.default, (x.clone().requires_grad_(), log))
        y = torch.ops.multisoftmax.softmax_fwd(x, log)
        dy = randn(5, 33, dtype=torch.float64, device=torch_device, seed=11)
        torch.library.opcheck(torch.ops.multisoftmax.softmax_bwd.default,
                              (y.clone().requires_grad_(), dy.requires_grad_(), log))


def test_torch_compile_fullgraph(torch_device):
    backend = "inductor" if torch_device == "cuda" else "aot_eager"

    def f(t):
        return (mt.softmax(t * 2.0, -1) * mt.log_softmax(t, 0)).sum()

    compiled = torch.compile(f, fullgraph=True, backend=backend)
    x = randn(6, 40, device=torch_device, seed=12).requires_grad_()
    loss = compiled(x)
    (g,) = torch.autograd.grad(loss, x)
    x2 = x.detach().double().requires_grad_()
    expected = (torch.softmax(x2 * 2.0, -1) * torch.log_softmax(x2, 0)).sum()
    (g2,) = torch.autograd.grad(expected, x2)
    ref.assert_close(loss.detach().cpu(), expected.detach().cpu(), "float32")
    ref.assert_close(g.cpu(), g2.cpu(), "float32", scale_atol=True)


def test_modules(torch_device):
    x = randn(3, 4, 5, device=torch_device)
    assert torch.equal(mt.Softmax(1)(x), mt.softmax(x, 1))
    assert torch.equal(mt.LogSoftmax()(x), mt.log_softmax(x, -1))
    assert "dim=1" in repr(mt.Softmax(1))


def test_kernels_run_not_the_native_op(torch_device, monkeypatch):
    """With the interpreter (CPU) or on CUDA, torch's own softmax must never be called."""
    def refuse(*args, **kwargs):
        raise AssertionError("the native softmax was called")

    for name in ("softmax", "log_softmax", "_softmax", "_log_softmax"):
        monkeypatch.setattr(torch, name, refuse)
        monkeypatch.setattr(torch.ops.aten, name, refuse, raising=False)
    x = randn(3, 10, device=torch_device)
    y = mt.softmax(x)
    monkeypatch.undo()
    ref.assert_close(y.cpu(), torch.softmax(x.double(), -1).cpu(), "float32")


def test_cpu_default_is_native(monkeypatch):
    """Without MULTISOFTMAX_INTERPRET, CPU tensors go to torch.softmax (a model runs anywhere)."""
    monkeypatch.setenv("MULTISOFTMAX_INTERPRET", "0")
    calls = []
    native = torch.softmax
    monkeypatch.setattr(torch, "softmax", lambda *a, **k: calls.append(1) or native(*a, **k))
    x = randn(3, 10)
    mt.softmax(x)
    assert calls == [1]


@pytest.mark.parametrize("ops", OPS, ids=OP_IDS)
def test_middle_dim_reads_x_in_place(torch_device, ops, monkeypatch):
    """A softmax over a middle dim runs the columns kernels on x as it lies (no copy into rows):
    contiguous, sliced, and with dims around `dim` that do not merge (copied first); the result is
    contiguous, as torch's. A dim of stride 1 (channels-last over C) keeps the rows kernels."""
    ours, theirs, log = ops
    from multisoftmax import dispatch

    planned = []
    real = dispatch.plan_columns_forward
    monkeypatch.setattr(dispatch, "plan_columns_forward", lambda *a, **k: planned.append(a[:5]) or real(*a, **k))
    base = randn(2, 5, 7, 6, device=torch_device, seed=30)
    cases = {"contiguous": (base, 1, (2, 5, 42, 42, 1)), "sliced": (base[:, :, 1:6, ::2], 1, (2, 5, 15, None, None)),
             "unmergeable": (base.permute(0, 1, 3, 2), 1, (2, 5, 42, 42, 1)),
             "dim 0": (base, 0, (1, 2, 210, 210, 1))}
    for name, (x, dim, expected_plan) in cases.items():
        planned.clear()
        x_before = x.clone()
        y = ours(x, dim)
        assert y.is_contiguous() and y.shape == x.shape, name
        ref.assert_close(y.cpu(), theirs(x.double(), dim).cpu(), "float32", name)
        assert torch.equal(x, x_before), name
        assert planned and all(e is None or a == e for a, e in zip(planned[0][:3], expected_plan[:3])), (name, planned)
    planned.clear()
    channels_last = base.contiguous(memory_format=torch.channels_last)
    ref.assert_close(ours(channels_last, 1).cpu(), theirs(channels_last.double(), 1).cpu(), "float32", "channels_last")
    assert not planned, "a dim of stride 1 takes the rows kernels"


@pytest.mark.parametrize("ops", OPS, ids=OP_IDS)
def test_middle_dim_special_values_and_backward(torch_device, ops):
    """Columns kernels: NaN, +inf, an all -inf column, huge values, as torch; the backward
    (autograd through _EagerColumns) and gradcheck / gradgradcheck in float64 over dim 1."""
    ours, theirs, log = ops
    x = randn(4, 9, 6, device=torch_device, seed=31)
    x[0, :, 2] = -float("inf")
    x[1, 3, 0] = float("inf")
    x[2, 5, 4] = float("nan")
    x[3, :, 1] = 3e38
    x[3, ::2, 5] = -3e38
    got, expected = ours(x, 1), theirs(x.double(), 1).float()
    assert torch.equal(torch.isnan(got), torch.isnan(expected))
    ref.assert_close(got.cpu(), expected.cpu(), "float32")
    x = randn(3, 11, 4, device=torch_device, seed=32).requires_grad_()
    y = ours(x, 1)
    assert type(y.grad_fn).__name__ == "ViewBackward0" and type(y.grad_fn.next_functions[0][0]).__name__ \
        == "_EagerColumnsBackward"
    dy = randn(3, 11, 4, device=torch_device, seed=33)
    (dx,) = torch.autograd.grad(y, x, dy)
    expected = ref.softmax_backward(y.detach().double().cpu().numpy(), dy.double().cpu().numpy(), 1, log)
    ref.assert_close(dx.double().cpu(), expected, "float32", scale_atol=True)
    x64 = randn(2, 6, 3, dtype=torch.float64, device=torch_device, seed=34).requires_grad_()
    assert torch.autograd.gradcheck(lambda t: ours(t, 1), (x64,))
    assert torch.autograd.gradgradcheck(lambda t: ours(t, 1), (x64,))


def test_columns_opcheck(torch_device):
    x = randn(2, 7, 5, dtype=torch.float64, device=torch_device, seed=35)
    for log in (False, True):
        torch.library.opcheck(torch.ops.multisoftmax.softmax_cols_fwd.default, (x.clone().requires_grad_(), log))
        y = torch.ops.multisoftmax.softmax_cols_fwd(x, log)
        dy = randn(2, 7, 5, dtype=torch.float64, device=torch_device, seed=36)
        torch.library.opcheck(torch.ops.multisoftmax.softmax_cols_bwd.default,
                              (y.clone().requires_grad_(), dy.requires_grad_(), log))
    with pytest.raises(ValueError, match=r"must be 3-D \(B, N, T\)"):
        torch.ops.multisoftmax.softmax_cols_fwd(x[0], False)


def test_gpu_key_from_the_device_name(monkeypatch):
    """The torch adapter's key of dispatch.ROWS_TILINGS and GPU_CONSTANTS comes from the device's name (H200:
    its tuned tilings and constants; others: the H100's rules); on the CPU no key is passed at all."""
    from multisoftmax import dispatch

    for name, key in (("NVIDIA H200", "H200"), ("NVIDIA H100 80GB HBM3", ""), ("NVIDIA A100-SXM4-80GB", "")):
        monkeypatch.setattr(torch.cuda, "get_device_name", lambda index, name=name: name)
        assert mt._tuned_kw.__wrapped__(0) == {"gpu": key}
    seen, real = [], dispatch.plan_forward
    monkeypatch.setattr(dispatch, "plan_forward", lambda *a, **k: seen.append(k) or real(*a, **k))
    if not torch.cuda.is_available():
        mt.softmax(torch.randn(3, 5), -1)
        assert seen == [{}]
