"""multisoftmax.torch.softmax, forward and backward, on a CUDA green context's stream (a share
of the GPU's SMs), for a child process with a time limit: a cooperative plan made for more
SMs than the stream has would wait forever (multisoftmax/sms.py).

Used by tests/test_gpu.py::test_cooperative_plans_in_a_green_context and by
bench/probe_green.py, as

    python -c "import sys; sys.path.insert(0, 'tests'); import green_context; green_context.main('share', 16)"

It prints what multisoftmax.sms reads on the green context's stream, then a line a case
("ok", the plan's kernels and grids), and raises on a result out of tolerance.
"""

# Few long rows whose plan for all 132 SMs of an H100 is cooperative: 32 chunks a row (bf16
# N = 256000, tickets), 128 (float32 N = 1048576, tickets), 128 in a grid of 128 programs
# (float32 1 x 1048576, no tickets: every program must be resident at once).
CASES = ((64, 256_000, "bfloat16"), (16, 1_048_576, "float32"), (1, 1_048_576, "float32"))


def main(mode: str, num_sms: int, cases=CASES) -> None:
    """`mode`: "share", the adapter as it is (plans for the stream's SMs), or "device", plans
    for every SM of the device (as before multisoftmax.sms). `num_sms`: the green context's SMs."""
    import torch

    import multisoftmax.torch as mt
    import reference64 as ref
    from multisoftmax import dispatch, sms

    if mode == "device":
        sms.share = lambda device_sms, stream=None: device_sms
    green = torch.cuda.green_contexts.GreenContext.create(num_sms=num_sms, device_id=0)
    if hasattr(green, "Stream"):  # newer torch: the green context's streams
        stream = green.Stream()
    else:  # older torch: the green context becomes current, with a stream of its own
        green.set_context()
        stream = torch.cuda.current_stream()
    g = torch.Generator(device="cuda").manual_seed(0)
    with torch.cuda.stream(stream):
        handle = torch.cuda.current_stream().cuda_stream
        device_sms = torch.cuda.get_device_properties(0).multi_processor_count
        print(f"mode={mode} green context of {num_sms} SMs: sms.green_sms(stream)={sms.green_sms(handle)} "
              f"sms.affinity_sms()={sms.affinity_sms()} sms.share={sms.share(device_sms, handle)} "
              f"(device: {device_sms})", flush=True)
        for M, N, dtype in cases:
            x = (torch.randn(M, N, device="cuda", generator=g) * 3).to(getattr(torch, dtype)).requires_grad_()
            plan = mt._plan(dispatch.plan_forward, x, M, N, N, N, dtype, False)
            y = mt.softmax(x, -1)
            dy = torch.randn(M, N, device="cuda", generator=g).to(x.dtype)
            (dx,) = torch.autograd.grad(y, x, dy)
            y_again = mt.softmax(x.detach(), -1)  # a second eager call: the adapter's short path
            torch.cuda.synchronize()
            yd, dyd = y.detach().double().cpu(), dy.double().cpu()
            ref.assert_close(yd, torch.softmax(x.detach().double().cpu(), -1), dtype, f"green fwd {M}x{N}")
            ref.assert_close(y_again.double().cpu(), yd, dtype, f"green fwd again {M}x{N}")
            ref.assert_close(dx.double().cpu(), ref.softmax_backward(yd.numpy(), dyd.numpy()), dtype,
                             f"green bwd {M}x{N}", scale_atol=True)
            kinds = "+".join(f"{one.kernel}{list(one.grid)}" for one in plan)
            print(f"ok {M}x{N} {dtype}: {kinds}", flush=True)
