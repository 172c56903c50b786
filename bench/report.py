"""Tables, summary and plots from a benchmark's results.json (written by bench/run.py).

    python bench/report.py bench/results/h100/results.json [more.json ...] [--out DIR]

regenerates results.md and the PNGs beside the JSON (or in DIR) without touching a GPU.
Several JSONs (a second run with --only that filled in what a time-budget cut left out)
are merged into one results.json first.
"""

from __future__ import annotations

import argparse
import json
import math
import os
import statistics

import timing  # bench/timing.py: ON_STREAM, how its method strings name a stream run

OURS = ("ms-torch", "ms-jax")
DTYPES = ("float32", "bfloat16", "float16")
DIRECTIONS = ("fwd", "bwd")
OPS = ("softmax", "log_softmax")


# --------------------------------------------------------------------------------------
# indexing
# --------------------------------------------------------------------------------------
def ok(rec) -> bool:
    return rec is not None and rec.get("status") == "ok"


def index(data) -> dict:
    """(suite, dtype, op, direction, M, N, impl) -> record."""
    return {(r["suite"], r["dtype"], r["op"], r["direction"], r["M"], r["N"], r["impl"]): r
            for r in data["results"]}


def problems(data) -> dict:
    """(dtype, op, direction, M, N) -> {impl: record}, across suites (a shape counted once)."""
    out = {}
    for r in data["results"]:
        out.setdefault((r["dtype"], r["op"], r["direction"], r["M"], r["N"]), {})[r["impl"]] = r
    return out


def shapes(data, suite, dtype) -> list:
    seen = []
    for r in data["results"]:
        if r["suite"] == suite and r["dtype"] == dtype and (r["M"], r["N"]) not in seen:
            seen.append((r["M"], r["N"]))
    return sorted(seen, key=lambda s: (s[1], s[0])) if suite == "sweep" else seen


def best_peer(recs: dict):
    """(impl, record) of the fastest correct peer (not ours), or (None, None)."""
    peers = [(r["GBps"], name, r) for name, r in recs.items()
             if name not in OURS and ok(r) and not r.get("wrong")]
    if not peers:
        return None, None
    _, name, r = max(peers, key=lambda p: p[0])
    return name, r


def geomean(xs):
    xs = [x for x in xs if x and x > 0 and math.isfinite(x)]
    return math.exp(sum(map(math.log, xs)) / len(xs)) if xs else None


# --------------------------------------------------------------------------------------
# summary
# --------------------------------------------------------------------------------------
def few_rows_check(data) -> list:
    """Few long rows (M <= 64 of the LLM shapes): is GPU time <= 1.2 * bytes / copy BW + 4 us?"""
    copy = data["copy_GBps"]
    out = []
    for r in data["results"]:
        if r["suite"] != "llm" or r["M"] > 64 or r["impl"] not in OURS or not ok(r):
            continue
        nbytes = (2 if r["direction"] == "fwd" else 3) * r["M"] * r["N"] * (4 if r["dtype"] == "float32" else 2)
        bound = 1.2 * nbytes / copy / 1e3 + 4.0
        out.append(dict(impl=r["impl"], dtype=r["dtype"], op=r["op"], direction=r["direction"], M=r["M"],
                        N=r["N"], us=r["median_us"], bound_us=bound, ok=r["median_us"] <= bound))
    return out


def summarize(data) -> dict:
    copy = data["copy_GBps"]
    probs = problems(data)
    s = {"copy_GBps": copy, "copy_fraction": {}, "speedup": {}, "vs_best_peer": {}, "wrong": [],
         "few_long_rows": few_rows_check(data)}
    # fraction of copy bandwidth over the sweep
    for impl in OURS:
        for dtype in DTYPES:
            for op in OPS:
                for d in DIRECTIONS:
                    fr = [r["GBps"] / copy for r in data["results"] if r["suite"] == "sweep" and r["impl"] == impl
                          and r["dtype"] == dtype and r["op"] == op and r["direction"] == d and ok(r)]
                    if fr:
                        s["copy_fraction"][f"{impl}/{dtype}/{op}/{d}"] = {
                            "min": min(fr), "median": statistics.median(fr), "n": len(fr)}
    # geometric-mean speedups and wins, each (dtype, op, direction, M, N) counted once
    for impl in OURS:
        for dtype in DTYPES:
            for op in OPS:
                for d in DIRECTIONS:
                    keyed = {k: v for k, v in probs.items() if k[:3] == (dtype, op, d) and ok(v.get(impl))}
                    if not keyed:
                        continue
                    for peer in ("torch", "xla"):
                        ratios = [v[peer]["median_us"] / v[impl]["median_us"]
                                  for v in keyed.values() if ok(v.get(peer))]
                        g = geomean(ratios)
                        if g:
                            s["speedup"][f"{impl}/{dtype}/{op}/{d}/vs-{peer}"] = {"geomean": g, "n": len(ratios),
                                                                                 "min": min(ratios)}
                    wins, losses = 0, []
                    for (dt, o, dd, M, N), v in keyed.items():
                        name, best = best_peer(v)
                        if best is None:
                            continue
                        ratio = v[impl]["GBps"] / best["GBps"]
                        if ratio >= 1.0:
                            wins += 1
                        else:
                            losses.append({"M": M, "N": N, "ratio": round(ratio, 3), "best": name})
                    n = wins + len(losses)
                    if n:
                        s["vs_best_peer"][f"{impl}/{dtype}/{op}/{d}"] = {"wins": wins, "n": n, "losses": losses}
    s["wrong"] = [{k: r.get(k) for k in ("suite", "dtype", "op", "direction", "M", "N", "impl", "max_err", "tol")}
                  for r in data["results"] if r.get("wrong")]
    s["text"] = summary_text(s)
    return s


def summary_text(s) -> str:
    lines = []
    for impl in OURS:
        for dtype in DTYPES:
            parts = []
            for d in DIRECTIONS:
                f = s["copy_fraction"].get(f"{impl}/{dtype}/softmax/{d}")
                b = s["vs_best_peer"].get(f"{impl}/{dtype}/softmax/{d}")
                sp = [s["speedup"].get(f"{impl}/{dtype}/softmax/{d}/vs-{p}") for p in ("torch", "xla")]
                if not (f or b):
                    continue
                txt = f"{d}:"
                if f:
                    txt += f" copy-BW min {f['min']:.2f} med {f['median']:.2f}"
                for p, x in zip(("torch", "xla"), sp):
                    if x:
                        txt += f", x{x['geomean']:.2f} vs {p}"
                if b:
                    txt += f", >= best peer {b['wins']}/{b['n']}"
                parts.append(txt)
            if parts:
                lines.append(f"{impl:8s} {dtype:8s} " + " | ".join(parts))
    few = s["few_long_rows"]
    if few:
        lines.append(f"few long rows within 1.2*bytes/copyBW+4us: {sum(f['ok'] for f in few)}/{len(few)}")
    if s["wrong"]:
        lines.append(f"OVER TOLERANCE: {len(s['wrong'])} results (see summary.wrong)")
    return "\n".join(lines)


# --------------------------------------------------------------------------------------
# markdown
# --------------------------------------------------------------------------------------
def _cell(rec, with_us: bool) -> str:
    if rec is None:
        return "-"
    if rec["status"] != "ok":
        return "ERR"
    txt = f"{rec['GBps']:.0f}" + (f" / {rec['median_us']:.1f}" if with_us else "")
    return txt + (" (!)" if rec.get("wrong") else "")


def table(data, suite, dtype, op, direction, with_us: bool) -> list:
    idx = index(data)
    rows = [(M, N) for M, N in shapes(data, suite, dtype)
            if any((suite, dtype, op, direction, M, N, i) in idx for i in data["impl_order"])]
    impls = [i for i in data["impl_order"]
             if any((suite, dtype, op, direction, M, N, i) in idx for M, N in rows)]
    if not impls:
        return []
    ours = [i for i in OURS if i in impls]
    head = ["N", "M"] + impls + ["best peer"] + [f"{i}/best" for i in ours]
    out = ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    for M, N in rows:
        recs = {i: idx.get((suite, dtype, op, direction, M, N, i)) for i in impls}
        name, best = best_peer(recs)
        cells = [str(N), str(M)] + [_cell(recs[i], with_us) for i in impls]
        cells.append(f"{name} {best['GBps']:.0f}" if best else "-")
        for i in ours:
            r = recs.get(i)
            cells.append(f"{r['GBps'] / best['GBps']:.2f}" if ok(r) and best else "-")
        out.append("| " + " | ".join(cells) + " |")
    return out


def torch_timing(data) -> str:
    """How the run timed torch impls, from its records' method strings: since 9105ad6 calls moving
    >= 256 MiB on the stream (timing.torch_time), before it every capturable call in a graph."""
    stream = any(timing.ON_STREAM in (r.get("method") or "") for r in data["results"])
    if stream:
        return ("calls moving >= 256 MiB: 5 back to back on the stream, as the JAX chains and the copy ceiling "
                "run; smaller calls: a CUDA graph of k >= 20 calls rotating over input copies that exceed 2x L2")
    return "a CUDA graph of k calls (>= 20 rotating over input copies that exceed 2x L2; 5 on one copy for " \
           "calls moving >= 256 MB)"


def markdown(data) -> str:
    meta, s = data["meta"], data.get("summary") or summarize(data)
    dev, v = meta["device"], meta["versions"]
    md = [f"# multisoftmax benchmark: {dev['name']}", ""]
    md.append(f"{meta['date']}; driver {dev.get('driver')}, CUDA {dev.get('cuda')}; "
              + ", ".join(f"{k} {val}" for k, val in v.items() if val) + ".")
    tree = (meta.get("source") or {}).get("multisoftmax_tree")
    if tree and not meta.get("merged_runs"):
        md += ["", f"The package that ran: git tree `{tree}` (`git rev-parse <commit>:multisoftmax`)."]
    if meta.get("smoke"):
        md += ["", "**SMOKE RUN on the CPU: tiny shapes, wall-clock timings; the numbers mean nothing.**"]
    md += ["", f"Copy bandwidth (`b.copy_(a)`, {'64 MiB' if meta.get('smoke') else '1 GiB'} fp32, read + write, "
           f"median): **{data['copy_GBps']:.0f} GB/s**. "
           "GB/s = fewest bytes a fused kernel must move / median GPU time: forward 2 tensors (read x, write y), "
           "backward 3 (read y, read dy, write dx). Cells: GB/s (LLM tables: GB/s / microseconds); "
           "ERR = the impl refused or failed; - = not run; (!) = output over tolerance "
           f"({', '.join(f'{k} {t}' for k, t in meta['tolerance'].items())}). "
           "`ms-torch`/`ms-jax` = multisoftmax through its torch / JAX adapter; `best peer` = fastest correct "
           "non-multisoftmax impl; `x/best` = x's GB/s over it.",
           "", "Timing (bench/timing.py): GPU time, one clock for torch and JAX: the durations of the kernels, "
           "memsets and copies that CUPTI records (read through the JAX profiler, which sees every CUDA launch in "
           "the process), summed over k calls / k, median of 5 runs; gaps between kernels not counted. torch "
           f"impls: {torch_timing(data)}; JAX impls: one jitted chain of k calls, each waiting for the previous "
           "through an optimization barrier, on up to 64 input copies; the copy ceiling: 5 back-to-back "
           "`b.copy_(a)`. Backward of JAX impls = the jitted vjp pullback applied to dy (residuals from a forward "
           "outside the timed function)."]
    b = meta["budget"]
    if meta.get("merged_runs"):
        trees = {r.get("multisoftmax_tree") for r in meta["merged_runs"]}
        one_package = len(trees) == 1 and None not in trees  # a run split across calls
        runs = (" of one package, a run split across calls of `bench/run.py` by `--only`" if one_package else "")
        why = (":" if one_package else
               ". A later run re-measures the shapes that a change of the code since the first run moves, with "
               "every peer unless its line names the impls it ran; every other shape runs the same kernels and "
               "plans as when it was measured:")
        md += ["", f"**Merged from {len(meta['merged_runs'])} runs{runs}; a later run's record of a shape and impl "
               f"replaces an earlier one** (`python bench/report.py run1.json run2.json ...`){why}"]
        for i, r in enumerate(meta["merged_runs"], 1):
            rb = r.get("budget") or {}
            cut = (f", its time budget cut {rb['skipped_measurements']} measurements from `{rb['hit_at']}` on"
                   if rb.get("hit_at") else "")
            few = r.get("impls") and len(r["impls"]) <= 2
            only = f", {' and '.join(r['impls'])} only" if few else ""
            what = f"{r['records']} records" if r["records"] else "host overhead only (--only '^host/')"
            ran = f", package tree `{r['multisoftmax_tree'][:12]}`" if r.get("multisoftmax_tree") else ""
            md += [f"{i}. {r['date']}: {what}, copy {r['copy_GBps']:.0f} GB/s{only}{ran}{cut}"]
    elif b.get("hit_at"):
        md += ["", f"**Time budget ({b['max_seconds']:.0f} s) reached at `{b['hit_at']}`: "
               f"{b['skipped_measurements']} measurements not run.**"]
    md += ["", "## Summary", "", "```", s.get("text", ""), "```", ""]
    md += ["| impl | dtype | op | dir | copy-BW fraction min / median (sweep) | geomean speedup vs torch | "
           "vs xla | >= best peer |", "|---|---|---|---|---|---|---|---|"]
    for impl in OURS:
        for dtype in DTYPES:
            for op in OPS:
                for d in DIRECTIONS:
                    k = f"{impl}/{dtype}/{op}/{d}"
                    f, w = s["copy_fraction"].get(k), s["vs_best_peer"].get(k)
                    sp = [s["speedup"].get(f"{k}/vs-{p}") for p in ("torch", "xla")]
                    if not (f or w or any(sp)):
                        continue
                    md.append(f"| {impl} | {dtype} | {op} | {d} | "
                              + (f"{f['min']:.2f} / {f['median']:.2f}" if f else "-") + " | "
                              + " | ".join(f"{x['geomean']:.2f} (n={x['n']})" if x else "-" for x in sp) + " | "
                              + (f"{w['wins']}/{w['n']}" if w else "-") + " |")
    losses = [(k, l) for k, w in s["vs_best_peer"].items() for l in w["losses"]]
    if losses:
        md += ["", "Shapes where multisoftmax is below the best peer:", "",
               "| impl/dtype/op/dir | M x N | ratio | best peer |", "|---|---|---|---|"]
        md += [f"| {k} | {l['M']} x {l['N']} | {l['ratio']:.2f} | {l['best']} |" for k, l in losses]
    if s["wrong"]:
        md += ["", "Results over tolerance:", "", "| suite | dtype | op | dir | M x N | impl | max err | tol |",
               "|---|---|---|---|---|---|---|---|"]
        md += [f"| {w['suite']} | {w['dtype']} | {w['op']} | {w['direction']} | {w['M']} x {w['N']} | {w['impl']} "
               f"| {w['max_err']} | {w['tol']:.2g} |" for w in s["wrong"]]
    if data.get("host_overhead_us"):
        rounds = data.get("host_overhead_rounds_us") or {}
        md += ["", "## Host overhead per call (32 x 1024 fp32 softmax forward, back-to-back calls, one sync at "
               "the end; the best of interleaved rounds, and their median)", "",
               "| impl | us a call | median of rounds |", "|---|---|---|"]
        md += [f"| {k} | {'ERR' if u is None else f'{u:.1f}'} | "
               f"{f'{statistics.median(rounds[k]):.1f} ({len(rounds[k])})' if rounds.get(k) else '-'} |"
               for k, u in data["host_overhead_us"].items()]
    if s["few_long_rows"]:
        md += ["", "## Few long rows: GPU time vs 1.2 * bytes / copy BW + 4 us", "",
               "| impl | dtype | op | dir | M x N | us | bound us | ok |", "|---|---|---|---|---|---|---|---|"]
        md += [f"| {f['impl']} | {f['dtype']} | {f['op']} | {f['direction']} | {f['M']} x {f['N']} | {f['us']:.1f} "
               f"| {f['bound_us']:.1f} | {'yes' if f['ok'] else 'NO'} |" for f in s["few_long_rows"]]
    for suite, title, with_us in (("sweep", "N sweep (M x N x itemsize ~ 256 MB, M <= {cap})", False),
                                  ("llm", "LLM shapes", True)):
        for op in OPS:
            for dtype in DTYPES:
                for d in DIRECTIONS:
                    t = table(data, suite, dtype, op, d, with_us)
                    if t:
                        head = title.format(cap=meta["args"].get("m_cap"))
                        md += ["", f"## {head}: {op} {'forward' if d == 'fwd' else 'backward'}, {dtype}", ""] + t
    md += ["", "## Implementations", "", "| impl | what |", "|---|---|"]
    md += [f"| {k} | {v['note']} |" for k, v in data["impls"].items()]
    md += [f"| {k} | not run: {why} |" for k, why in data.get("unavailable", {}).items()]
    jax_rows = [r for r in data["results"] if r.get("call_us") is not None and ok(r)]
    if jax_rows:
        md += ["", "JAX per-call wall-clock time (back-to-back jitted calls, host included) is `call_us` in "
               "results.json."]
    md.append("")
    return "\n".join(md)


# --------------------------------------------------------------------------------------
# plots
# --------------------------------------------------------------------------------------
STYLE = {"ms-torch": dict(color="C3", lw=2.6, marker="o"), "ms-jax": dict(color="C1", lw=2.6, marker="s"),
         "torch": dict(color="C0"), "compile": dict(color="C9"), "xla": dict(color="C2"),
         "liger": dict(color="C4"), "seed001": dict(color="C5"), "seed000": dict(color="C6"),
         "ref": dict(color="C7", ls=":")}


def plot_sweep(data, op, path) -> bool:
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    dtypes = [d for d in DTYPES if any(r["suite"] == "sweep" and r["dtype"] == d and r["op"] == op
                                       for r in data["results"])]
    if not dtypes:
        return False
    fig, axes = plt.subplots(len(dtypes), 2, figsize=(14, 4.2 * len(dtypes)), squeeze=False, sharex=True)
    handles = {}
    for row, dtype in enumerate(dtypes):
        for col, d in enumerate(DIRECTIONS):
            ax = axes[row][col]
            for impl in data["impl_order"]:
                pts = sorted((r["N"], r["GBps"]) for r in data["results"] if r["suite"] == "sweep" and
                             r["dtype"] == dtype and r["op"] == op and r["direction"] == d and r["impl"] == impl
                             and ok(r) and not r.get("wrong"))
                if pts:
                    st = dict(lw=1.4, marker=".", ms=5) | STYLE.get(impl, {})
                    (h,) = ax.plot(*zip(*pts), label=impl, **st)
                    handles[impl] = h
            h = ax.axhline(data["copy_GBps"], color="k", ls="--", lw=1)
            handles["copy BW"] = h
            ax.set_xscale("log", base=2)
            ax.set_title(f"{op} {'forward' if d == 'fwd' else 'backward'}, {dtype}")
            ax.set_ylabel("GB/s")
            ax.set_ylim(bottom=0)
            ax.grid(alpha=0.3, which="both")
        axes[-1][0].set_xlabel("N (row length); M x N x itemsize ~ 256 MB")
        axes[-1][1].set_xlabel("N (row length); M x N x itemsize ~ 256 MB")
    fig.suptitle(f"{data['meta']['device']['name']}: {op}, GB/s (fewest bytes / median time)", y=0.995)
    fig.legend(list(handles.values()), list(handles), loc="upper center", ncol=min(10, len(handles)),
               bbox_to_anchor=(0.5, 0.975))
    fig.tight_layout(rect=(0, 0, 1, 0.94))
    fig.savefig(path, dpi=110)
    plt.close(fig)
    return True


def plot_llm(data, op, path) -> bool:
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    dtypes = [d for d in DTYPES if any(r["suite"] == "llm" and r["dtype"] == d and r["op"] == op
                                       for r in data["results"])]
    if not dtypes:
        return False
    fig, axes = plt.subplots(len(dtypes) * 2, 1, figsize=(18, 4.6 * 2 * len(dtypes)), squeeze=False)
    for row, (dtype, d) in enumerate((dt, d) for dt in dtypes for d in DIRECTIONS):
        ax = axes[row][0]
        shp = shapes(data, "llm", dtype)
        recs = [r for r in data["results"] if r["suite"] == "llm" and r["dtype"] == dtype and r["op"] == op
                and r["direction"] == d and ok(r) and not r.get("wrong")]
        impls = [i for i in data["impl_order"] if any(r["impl"] == i for r in recs)]
        width = 0.85 / max(1, len(impls))
        for j, impl in enumerate(impls):
            by = {(r["M"], r["N"]): r["GBps"] for r in recs if r["impl"] == impl}
            xs = [k + (j - (len(impls) - 1) / 2) * width for k, s in enumerate(shp) if s in by]
            ys = [by[s] for s in shp if s in by]
            ax.bar(xs, ys, width, label=impl, color=STYLE.get(impl, {}).get("color"))
        ax.axhline(data["copy_GBps"], color="k", ls="--", lw=1, label="copy BW")
        ax.set_xticks(range(len(shp)), [f"{M}x{N}" for M, N in shp], rotation=30, ha="right")
        ax.set_ylabel("GB/s")
        ax.set_title(f"LLM shapes: {op} {'forward' if d == 'fwd' else 'backward'}, {dtype}")
        ax.grid(alpha=0.3, axis="y")
        ax.legend(ncol=min(10, len(impls) + 1), fontsize=8, loc="upper right")
    fig.tight_layout()
    fig.savefig(path, dpi=100)
    plt.close(fig)
    return True


def write_all(data, out_dir) -> list:
    """results.md and the PNGs; returns the files written."""
    if "summary" not in data or "text" not in data.get("summary", {}):
        data["summary"] = summarize(data)
    written = []
    path = os.path.join(out_dir, "results.md")
    with open(path, "w") as f:
        f.write(markdown(data))
    written.append(path)
    for op in OPS:
        for kind, fn in (("sweep", plot_sweep), ("llm", plot_llm)):
            p = os.path.join(out_dir, f"{kind}_{op}.png")
            if fn(data, op, p):
                written.append(p)
    return written


def merge(runs: list) -> dict:
    """One results dict from several runs (e.g. a second run with --only filling a budget cut):
    meta and copy bandwidth from the first, every other field unioned, a later record of the
    same (suite, dtype, op, direction, M, N, impl) replacing an earlier one."""
    data = dict(runs[0])
    records = {}
    for run in runs:
        for r in run["results"]:
            records[(r["suite"], r["dtype"], r["op"], r["direction"], r["M"], r["N"], r["impl"])] = r
        for key in ("host_overhead_us", "host_overhead_rounds_us", "impls", "unavailable"):
            data[key] = {**data.get(key, {}), **run.get(key, {})}
        data["impl_order"] = data["impl_order"] + [i for i in run["impl_order"] if i not in data["impl_order"]]
    data["results"] = list(records.values())
    for name in data["impls"]:
        data["unavailable"].pop(name, None)
    data.pop("summary", None)
    if len(runs) > 1:  # a run that is itself a merge contributes its own list of runs
        data["meta"] = {**data["meta"], "merged_runs": [
            m for r in runs for m in r["meta"].get("merged_runs") or [
                {"date": r["meta"].get("date"), "copy_GBps": r.get("copy_GBps"), "records": len(r["results"]),
                 "multisoftmax_tree": (r["meta"].get("source") or {}).get("multisoftmax_tree"),
                 "budget": r["meta"].get("budget"), "impls": sorted({x["impl"] for x in r["results"]})}]]}
    return data


def main():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("json", nargs="+", help="results.json written by bench/run.py (several: merged, later wins)")
    p.add_argument("--out", help="folder for results.md and the PNGs (default: the first JSON's folder)")
    a = p.parse_args()
    runs = []
    for path in a.json:
        with open(path) as f:
            runs.append(json.load(f))
    data = merge(runs)
    data["summary"] = summarize(data)
    out = a.out or os.path.dirname(os.path.abspath(a.json[0]))
    os.makedirs(out, exist_ok=True)
    if len(runs) > 1:
        with open(os.path.join(out, "results.json"), "w") as f:
            json.dump(data, f, indent=1)
        print("wrote", os.path.join(out, "results.json"), f"(merged from {len(runs)} runs)")
    for path in write_all(data, out):
        print("wrote", path)
    print(data["summary"]["text"])


if __name__ == "__main__":
    main()
