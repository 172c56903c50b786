"""Issue 3's speed targets from a benchmark's results.json (written by bench/run.py or merged by
bench/report.py), as the README's Performance section states them:

    python bench/targets.py bench/results/h100/results.json [--before OLD.json]

T1: each adapter's lowest fractions of the copy bandwidth on shapes of >= 256 MiB a tensor (the
sweep's ~256 MB shapes, where the issue asks for 0.90); T2: the shape x op x direction cases where
an adapter is at least as fast as the best peer, the cases behind, and the geometric-mean speedups
over torch.softmax and XLA of all shapes of a direction; T3: few long rows against 1.2 x bytes /
copy BW + 4 us (report.few_rows_check), the case of the largest time / bound and those over it; T4:
host time a call and the JAX adapter's ratio to jitted jax.nn.softmax. `--before OLD.json`: each
adapter's GPU time on the launches that dispatch.fills_shared names (FILL_SHARED), against
OLD.json's (the run before the rule), and its wins over N = 512-4096 in both. `--behind K`: list K
cases behind (0: all; default 5), `--plans` with dispatch's launch for each as this tree plans it on
the run's SM count (to see which rule a case falls under, e.g. on another device than the one the
rules were tuned on). No GPU needed.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys

import report  # bench/report.py: indexing, best peer, geomean, few-rows check

T1_BYTES = 256 * 2**20
ITEMSIZE = {"float32": 4, "bfloat16": 2, "float16": 2}


def t1(data, impl: str, lowest: int = 3) -> tuple[int, int, list]:
    """(shapes at >= 0.90 of copy, shapes, the `lowest` fractions with their keys) over records of
    >= T1_BYTES a tensor."""
    copy = data["copy_GBps"]
    fr = sorted((r["GBps"] / copy, r["dtype"], r["op"], r["direction"], r["M"], r["N"], r["median_us"])
                for r in data["results"] if r["impl"] == impl and report.ok(r)
                and r["M"] * r["N"] * ITEMSIZE[r["dtype"]] >= T1_BYTES)
    return sum(f[0] >= 0.90 for f in fr), len(fr), fr[:lowest]


def t2(data, impl: str, n_range=None) -> tuple[int, int, list, dict]:
    """(wins, cases, cases behind sorted by ratio, {direction/peer: geomean speedup}) over every
    shape x op x direction (N within `n_range`, where given)."""
    wins, n, behind, speedups = 0, 0, [], {}
    for (dtype, op, d, M, N), recs in report.problems(data).items():
        if not report.ok(recs.get(impl)) or (n_range and not n_range[0] <= N <= n_range[1]):
            continue
        name, best = report.best_peer(recs)
        if best is not None:
            n += 1
            ratio = recs[impl]["GBps"] / best["GBps"]
            wins += ratio >= 1.0
            if ratio < 1.0:
                behind.append((round(ratio, 4), dtype, op, d, M, N, name))
        for peer in ("torch", "xla"):
            if report.ok(recs.get(peer)):
                speedups.setdefault(f"{d}/{peer}", []).append(recs[peer]["median_us"] / recs[impl]["median_us"])
    return wins, n, sorted(behind), {k: report.geomean(v) for k, v in sorted(speedups.items())}


def t3(data, impl: str) -> tuple[int, int, dict | None, list]:
    """(cases within 1.2 x bytes / copy BW + 4 us, few-row cases, the case of the largest time / bound (nearest
    the bound, or furthest over it), the cases over it) of report.few_rows_check."""
    few = [f for f in report.few_rows_check(data) if f["impl"] == impl]
    tightest = max(few, key=lambda f: f["us"] / f["bound_us"], default=None)
    return sum(f["ok"] for f in few), len(few), tightest, [f for f in few if not f["ok"]]


def _few_case(f: dict) -> str:
    """A record of report.few_rows_check in a few words: dtype, op, direction, shape, GPU time in us."""
    return f"{f['dtype']} {f['op']} {f['direction']} {f['M']}x{f['N']} {f['us']:.3f}"


def _dispatch():
    sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), os.pardir))
    from multisoftmax import dispatch

    return dispatch


def plan(dtype: str, op: str, d: str, M: int, N: int, sms: int, gpu: str = "") -> tuple:
    """dispatch's launches for a contiguous M x N case of the benchmark (as the adapters plan it on `sms`
    SMs of a GPU whose key of dispatch.ROWS_TILINGS and GPU_CONSTANTS is `gpu`)."""
    dispatch = _dispatch()
    return (dispatch.plan_forward(M, N, N, N, dtype, op == "log_softmax", sms, gpu=gpu) if d == "fwd"
            else dispatch.plan_backward(M, N, N, N, N, dtype, op == "log_softmax", sms, gpu=gpu))


def device_plan_args(data) -> tuple:
    """(sms, gpu) of the device a results.json was measured on, for `plan`."""
    device = data["meta"]["device"]
    return device["sms"], _dispatch().tuned_gpu(device.get("name", ""))


def plan_name(dtype: str, op: str, d: str, M: int, N: int, sms: int, gpu: str = "") -> str:
    """The first launch of `plan`, in a word: its kernel and tile (rows a program, lanes or chunk,
    warps, register cap), then how many launches the plan has where more than one."""
    launches = plan(dtype, op, d, M, N, sms, gpu)
    kw = dict(launches[0].kwargs)
    tile = " ".join(f"{k}={kw[k]}" for k in ("BLOCK_M", "BLOCK_N", "CHUNK_N", "num_warps", "maxnreg") if k in kw)
    return f"{launches[0].kernel} {tile}" + (f" (+{len(launches) - 1} launches)" if len(launches) > 1 else "")


def filled(data, before, impl: str) -> list:
    """[(time / time before, key)] of `impl`'s records whose plan dispatch.fills_shared names, on
    the device's SM count, where `before` has the same record."""
    dispatch = _dispatch()
    device = device_plan_args(data)
    old = report.index(before)
    out = []
    for key, r in report.index(data).items():
        suite, dtype, op, d, M, N, name = key
        if name != impl or not report.ok(r) or dtype not in ITEMSIZE or not report.ok(old.get(key)):
            continue
        if any(dispatch.fills_shared(launch) for launch in plan(dtype, op, d, M, N, *device)):
            out.append((r["median_us"] / old[key]["median_us"], key))
    return sorted(out)


def main():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("json", help="results.json")
    p.add_argument("--before", help="an earlier results.json: FILL_SHARED's launches against it")
    p.add_argument("--behind", type=int, default=5, help="cases behind the best peer to list (0: all)")
    p.add_argument("--plans", action="store_true", help="name dispatch's launch beside each case behind")
    a = p.parse_args()
    with open(a.json) as f:
        data = json.load(f)
    print(f"copy {data['copy_GBps']:.0f} GB/s")
    for impl in report.OURS:
        ok, n, low = t1(data, impl)
        print(f"T1 {impl}: {ok}/{n} shapes >= 0.90 of copy; lowest "
              + ", ".join(f"{f:.4f} {dt} {op} {d} {M}x{N} ({us:.1f} us)" for f, dt, op, d, M, N, us in low))
        wins, n, behind, g = t2(data, impl)
        print(f"T2 {impl}: {wins}/{n} >= best peer; geomeans " + ", ".join(f"{k} {v:.4f}" for k, v in g.items()))
        for ratio, *key, peer in behind[:a.behind or None]:
            print(f"   behind: {ratio:.4f} of {peer}, " + " ".join(map(str, key))
                  + (f": {plan_name(*key, *device_plan_args(data))}" if a.plans else ""))
        within, n, tightest, over = t3(data, impl)
        print(f"T3 {impl}: {within}/{n} within the bound"
              + (f"; largest time / bound {_few_case(tightest)} of {tightest['bound_us']:.3f} us "
                 f"({tightest['us'] / tightest['bound_us']:.3f})" if tightest else "")
              + "; over: " + ", ".join(f"{_few_case(f)} > {f['bound_us']:.3f} us" for f in over))
    host = data.get("host_overhead_us") or {}
    if host:
        print("T4: " + ", ".join(f"{k} {host[k]:.1f} us" for k in ("ms-torch", "torch", "ms-jax", "xla") if k in host)
              + (f"; ms-jax / xla {host['ms-jax'] / host['xla']:.3f}" if "ms-jax" in host and "xla" in host else ""))
    if a.before:
        with open(a.before) as f:
            before = json.load(f)
        for impl in report.OURS:
            ratios = [x for x, _ in filled(data, before, impl)]
            if ratios:
                print(f"FILL_SHARED {impl}: {len(ratios)} records, {sum(x < 1 for x in ratios)} shorter, time ratio "
                      f"median {statistics.median(ratios):.4f}, min {min(ratios):.4f}, max {max(ratios):.4f}")
            now, then = t2(data, impl, (512, 4096)), t2(before, impl, (512, 4096))
            print(f"   {impl} >= best peer at N = 512-4096: {now[0]}/{now[1]} (before: {then[0]}/{then[1]})")


if __name__ == "__main__":
    main()
