"""dispatch's rules patched to force plans it does not choose at test sizes, or as an earlier tree had them, and
the tilings some rules are expected to give, written out apart from dispatch (tests only)."""

import contextlib
import dataclasses

# The cooperative forward on keyed partials (SENT) at any grid: no TAG, no packed wide chunks
# or unpacked ones, float32 SENT from 0 programs an SM; the 16-bit softmax there with POLY (COOP_POLY,
# which dispatch no longer takes since 2026-11-27: the kernel's path stays tested).
FORCE_SENT = (("_coop_tag_fwd", lambda *a: None), ("COOP_SENT32_MIN_PER_SM", 0), ("COOP_SENT32_LOG_MIN_PER_SM", 0),
              ("COOP_FWD_UNPACKED_PER_SM", 0), ("COOP_PACK_WIDE_MIN_PER_SM", 0), ("COOP_WIDE_MAX_N", 0),
              ("COOP_POLY", True))


def _force(dispatch, names_values, set_attr):
    """Set each (name, value) of `names_values` on `dispatch` (the module) through `set_attr`
    (pytest's monkeypatch.setattr to have it undone), drop a GPU's own values of those names
    (dispatch.GPU_CONSTANTS) so that the forcing holds on every GPU, and clear the plans' caches."""
    for name, value in names_values:
        set_attr(dispatch, name, value)
    names = {name for name, _ in names_values}
    set_attr(dispatch, "GPU_CONSTANTS", {gpu: {k: v for k, v in constants.items() if k not in names}
                                         for gpu, constants in dispatch.GPU_CONSTANTS.items()})
    dispatch.plan_forward.cache_clear()
    dispatch.plan_backward.cache_clear()


def force_sent(dispatch, set_attr=setattr):
    """Patch `dispatch` by FORCE_SENT (`_force`)."""
    _force(dispatch, FORCE_SENT, set_attr)


# The pipelined backward (softmax_bwd_pipe) wherever PIPE_PLANS has a plan for the dtype and op: any
# grid, any number of chunks a row, and rows that would wait through TAG on counters instead; the
# pipelined forward (softmax_fwd_pipe) wherever PIPE_FWD_PLANS has one, in place of any cooperative plan.
FORCE_PIPE = (("PIPE16_MIN_PER_SM", 0), ("PIPE16_MAX_PER_SM", float("inf")), ("PIPE32_MIN_PER_SM", 0),
              ("PIPE32_MIN_CHUNKS", 0), ("PIPE32_TAG_MAX_PER_SM", {False: float("inf"), True: float("inf")}),
              ("COOP_TAG_MAX_CHUNKS", 0), ("PIPE_FWD_MIN_CHUNKS", 0), ("PIPE_FWD_MIN_PER_SM", {False: 0, True: 0}))


def force_pipe(dispatch, set_attr=setattr):
    """Patch `dispatch` by FORCE_PIPE (`_force`)."""
    _force(dispatch, FORCE_PIPE, set_attr)


def module_values(dispatch, names, set_attr=setattr):
    """Patch `dispatch` so that every GPU plans with the module's own values of `names` (its GPUs' values of
    those names dropped; `_force`)."""
    _force(dispatch, [(name, getattr(dispatch, name)) for name in names], set_attr)


# The H200's forward of aligned rows with longer tails and its cap on rows with a tail, which the logs before
# bench/results/h200/probe_rows_fwd_tails.log ran without (tests/test_bench_*.py hold those logs to the plans
# without them).
FWD_TAILS = ("ROWS_FWD_TAILS", "ROWS_TAIL_FWD_CAP_REGS")

# The H200's 16-bit rows forward by ex2.approx.ftz and its warps with it, which the rows logs before
# bench/results/h200/probe_rows_ftz.log ran without (tests/test_bench_rows_tilings.py and test_bench_gpu_constants.py
# hold those logs to the plans without them).
BEFORE_FTZ = ("ROWS16_FWD_FTZ", "ROWS16_FWD_FTZ_WARPS")

# The H200's unaligned 16-bit rows peeled (ROWS_PEEL16), which the rows logs before
# bench/results/h200/probe_rows_peel16.log ran without (tests/test_bench_peel16.py holds it to its own logs).
BEFORE_PEEL16 = ("ROWS_PEEL16",)

# The H200's ROWS_PEEL16 as bench/results/h200/probe_rows_peel16_64.log and the logs before it ran it (3ec4eb8: 2
# warps in 256 and 512 lanes, none in 64 and 128, the odd forwards in 1024 lanes from 640 values, the backwards from
# 768 at 2 warps; no small grids, no rows with a tail), for the tests that hold those logs to their plans
# (tests/test_bench_peel16.py); `gpu_values_within(dispatch, "H200", PEEL16_AT_3EC4EB8)`.
PEEL16_AT_3EC4EB8 = {
    "ROWS_PEEL16": {(True, 256): (8, 2, 0.0, 4), (True, 512): (4, 2, 0.0, 1), (True, 1024): (1, 1, 0.625, 1),
                    (True, 2048): (1, 1, 0.0, 1), (False, 256): (8, 2, 0.0, 1), (False, 512): (4, 2, 0.0, 1),
                    (False, 1024): (1, 2, 0.75, 1), (False, 2048): (1, 2, 0.0, 1)},
    "ROWS_PEEL16_SMALL_LANES": {True: 0, False: 0}, "ROWS_PEEL16_TAILS": False, "ROWS_PEEL16_WHOLE_FILL": {},
    "ROWS_WHOLE16_TAILS": {}, "ROWS_ODD16_TILINGS": {}}

# The H200's ROWS_PEEL16 as bench/results/h200/probe_rows_peel16_32.log and probe_rows_short_odd.log ran it (244c6d0:
# no 16- or 32-lane entries, one row a program in every small grid, even rows with a tail peeled), for the tests that
# hold those logs to their plans (tests/test_bench_peel16.py); `gpu_values_within(dispatch, "H200", PEEL16_AT_244C6D0)`.
PEEL16_AT_244C6D0 = {
    "ROWS_PEEL16": {(True, 64): (8, 1, 0.0, 1), (True, 128): (8, 1, 0.0, 1), (True, 256): (4, 1, 0.0, 4),
                    (True, 512): (2, 1, 0.0, 1), (True, 1024): (1, 1, 0.0, 1), (True, 2048): (1, 1, 0.0, 1),
                    (False, 64): (8, 1, 0.0, 1), (False, 128): (8, 1, 0.0, 1), (False, 256): (4, 1, 0.0, 1),
                    (False, 512): (2, 1, 0.0, 1), (False, 1024): (1, 1, 0.0, 1), (False, 2048): (1, 2, 0.0, 1)},
    "ROWS_PEEL16_SMALL_M": {}, "ROWS_PEEL16_WHOLE_FILL": {}, "ROWS_WHOLE16_TAILS": {}, "ROWS_ODD16_TILINGS": {}}

# The H200's short unaligned 16-bit rows as the logs after 244c6d0 ran them (02f1616: the even rows with a tail alone
# whole, the odd ones peeled at ROWS_PEEL16's tiling), for the tests that hold those logs to their plans
# (tests/test_bench_peel16.py); `gpu_values_within(dispatch, "H200", WHOLE16_AT_02F1616)`.
WHOLE16_AT_02F1616 = {
    "ROWS_PEEL16_WHOLE_FILL": {}, "ROWS_ODD16_TILINGS": {},
    "ROWS_WHOLE16_TAILS": {(forward, BLOCK_N, False): (16, 1) for forward in (True, False) for BLOCK_N in (32, 64)}}

# The H200's plans before ROWS_ODD16_TILINGS, as bench/results/h200/probe_rows_short16_*.log ran them (cfc29ff), for
# tests/test_bench_peel16.py; `gpu_values_within(dispatch, "H200", ODD16_AT_CFC29FF)`.
ODD16_AT_CFC29FF = {"ROWS_ODD16_TILINGS": {}}


def without_ftz(plan) -> tuple:
    """`plan` (dispatch's launches) with FTZ left out of each launch's meta: a GPU's plan as it is but for FTZ
    (COLS16_FTZ, ROWS16_FWD_FTZ), to compare with the H100's rules, which leave it out."""
    return tuple(dataclasses.replace(one, meta=tuple((k, v) for k, v in one.meta if k != "FTZ")) for one in plan)


@contextlib.contextmanager
def patched_within(dispatch, patch):
    """`patch(dispatch, set_attr)` (which sets dispatch's names through set_attr) for the `with` block alone: the
    plans' caches cleared on entering it, the names undone and the caches cleared again on leaving it."""
    saved = {}

    def set_attr(obj, name, value):
        saved.setdefault(name, getattr(obj, name))
        setattr(obj, name, value)

    try:
        patch(dispatch, set_attr)
        dispatch.plan_forward.cache_clear()
        dispatch.plan_backward.cache_clear()
        yield
    finally:
        for name, value in saved.items():
            setattr(dispatch, name, value)
        dispatch.plan_forward.cache_clear()
        dispatch.plan_backward.cache_clear()


# The module's values (the H100's rules, every GPU's but where GPU_CONSTANTS has its own) of the 16-bit short-row
# tables before they became every GPU's (2026-12-06; till then the H200's alone, in GPU_CONSTANTS["H200"]).
TABLES16_BEFORE = {"ROWS_PEEL16": {}, "ROWS_PEEL16_SMALL_LANES": {True: 0, False: 0}, "ROWS_PEEL16_TAILS": False,
                   "ROWS_PEEL16_SMALL_M": {}, "ROWS_PEEL16_WHOLE_FILL": {}, "ROWS_WHOLE16_TAILS": {},
                   "ROWS_ODD16_TILINGS": {}, "ROWS_FWD16_SAME_LANES": ()}


def before_tables16(dispatch, set_attr=setattr):
    """Patch `dispatch` as it was before the 16-bit short-row tables became every GPU's: the tables (the module's values
    now) the H200's alone, the module's TABLES16_BEFORE, as the logs made before 2026-12-06 ran."""
    tables = {name: getattr(dispatch, name) for name in TABLES16_BEFORE}
    h200 = {**dispatch.GPU_CONSTANTS["H200"], **tables}
    set_attr(dispatch, "GPU_CONSTANTS", {**dispatch.GPU_CONSTANTS, "H200": h200})
    for name, value in TABLES16_BEFORE.items():
        set_attr(dispatch, name, value)


def before_tables16_within(dispatch, names=(), patch=None):
    """`patched_within`: `before_tables16`, then the module's values of `names` on every GPU (`module_values`: the
    rules' as they were) and `patch(dispatch, set_attr)` where given: a GPU's plans as a log made before ran them."""
    def both(d, set_attr):
        before_tables16(d, set_attr)
        module_values(d, names, set_attr)
        if patch is not None:
            patch(d, set_attr)
    return patched_within(dispatch, both)


def module_values_within(dispatch, names):
    """`module_values` for the `with` block alone (`patched_within`)."""
    return patched_within(dispatch, lambda d, set_attr: module_values(d, names, set_attr))


def gpu_values_within(dispatch, gpu, values):
    """dispatch.GPU_CONSTANTS[`gpu`] with `values` ({name: value}) in place of its own for the `with` block alone
    (`patched_within`): a GPU's plans as an earlier tree made them."""
    def patch(d, set_attr):
        set_attr(d, "GPU_CONSTANTS", {**d.GPU_CONSTANTS, gpu: {**d.GPU_CONSTANTS[gpu], **values}})
    return patched_within(dispatch, patch)


def before_whole32(dispatch, set_attr=setattr):
    """Patch `dispatch`'s module values (the H100's) as they were before the H100 had its short unaligned float32 rules
    (ROWS_WHOLE32 none, ROWS_FWD32_OFFS32 (0, 0); 2026-12-06), which the H100's logs before
    bench/results/h100/probe_rows_h100_whole32_*.log ran; `patched_within(dispatch, before_whole32)`."""
    set_attr(dispatch, "ROWS_WHOLE32", {})
    set_attr(dispatch, "ROWS_FWD32_OFFS32", (0, 0))


# ROWS_FWD32_OFFS32 (whole rows' lanes, peeled rows' values at most) that each GPU's key should have, written out apart
# from dispatch as bench/DISPATCH.md has them (every other GPU: the H100's, "").
FWD32_OFFS32_LIMITS = {"H200": (16, 32), "": (32, 0)}


def whole32_tiling(gpu, N, forward, log, odd):
    """(BLOCK_M, num_warps, small grids' BLOCK_M, num_warps) that ROWS_WHOLE32 should give float32 rows of N values
    (their row_segments' lanes; `odd`: ALIGN 1) on the GPU of key `gpu` ("H200", else the H100's rules), or None
    (kept peeled), as bench/DISPATCH.md's ROWS_WHOLE32 section has them."""
    if N == 1 or forward and log and odd and N > 17 or N == 4 and not odd:
        return None  # (1 value; the log_softmax forward of odd 19-31 values; 4 values of ALIGN 2: both GPUs)
    if gpu == "H200":
        return {2: (256, 4, 256, 4), 3: (64, 1, 32, 1), 4: (64, 1, 32, 1)}.get(N) or (
            (64, 2, 16, 1) if N <= 8 else (32, 1, 16, 1) if N <= 16 else (16, 1, 4, 1))
    if N == 2:
        return (256, 4, 256, 4) if forward else (128, 4, 128, 4)
    if N in (3, 4):
        return (128, 4, 128, 4)
    if N <= 8:
        return (64, 2, 16, 1) if forward else (32, 1, 16, 1)
    if forward and N > 17 and odd and not log:
        return (32, 2, 16, 1)
    return (32, 1, 16, 1) if forward and N <= 17 else (16, 1, 16, 1)


def before_grids16(dispatch, set_attr=setattr):
    """Patch `dispatch` as it was before the H100 re-tiled its peeled 16-bit rows by op and grid (ROWS_PEEL16_GRIDS
    none; 2026-12-07), which the H100's logs before bench/results/h100/probe_rows_h100_grids16_*.log ran;
    `patched_within(dispatch, before_grids16)`."""
    set_attr(dispatch, "ROWS_PEEL16_GRIDS", {})


def grids16_tiling(forward, N, log, M, gpu, num_sms=132):
    """(BLOCK_M, num_warps) that ROWS_PEEL16_GRIDS should give M 16-bit rows of N values that ROWS_PEEL16 peels (odd
    N, not 33, whose forward runs whole: ROWS_WHOLE16_TAILS; and the forward's even N of 137-263 values, not a multiple
    of 8) on the GPU of key `gpu` with `num_sms` SMs ("H200": none, else the H100's), or None (ROWS_PEEL16's own tiling,
    or rows it does not peel), as bench/DISPATCH.md's ROWS_PEEL16_GRIDS section has them: grids of at least 32 rows an
    SM; the backward of 73-127 values, log_softmax at 4 rows and 1 warp, softmax at 8 rows and 2 warps up to 512 rows an
    SM; the forward of 25-39 values at 8 rows and 1 warp up to 128 rows an SM (of 31-39 values up to 256, of 35-39 up to
    512), at 16 rows and 2 warps up to 1024, and past them the softmax of 31-39 and the log_softmax of 35-39; in small
    grids half ROWS_PEEL16's rows a program at 1 warp: the forward of 41-71 values (64 lanes) up to 64 rows an SM, of
    73-135 (128 lanes) up to 128 and of 137-263 (256 lanes) up to 48 (171-263 to 56, 211-263 to 72, 221-263 to 80), the
    log_softmax backward of 41-71 up to 80 (55-71 to 88) and of 137-263 up to 48 (171-221 to 56); and the softmax
    backward at 16 rows and 2 warps: of 41-71 values up to 32 rows an SM, 41-69 up to 40, 41-59 up to 48, 41-53 up to
    56 and 41-47 up to 64."""
    per_sm = M / num_sms
    if gpu == "H200" or per_sm < 32 or N % 8 == 0 or N % 2 == 0 and not (forward and 137 <= N <= 263):
        return None
    small = ((True, (False, True), 41, 71, 64, (4, 1)), (True, (False, True), 73, 135, 128, (4, 1)),
             *((True, (False, True), first, 263, most, (2, 1)) for first, most in ((137, 48), (171, 56), (211, 72),
                                                                                 (221, 80))),
             (False, (True,), 55, 71, 88, (4, 1)), (False, (True,), 41, 71, 80, (4, 1)),
             *((False, (False,), 41, last, most, (16, 2)) for last, most in ((71, 32), (69, 40), (59, 48), (53, 56),
                                                                            (47, 64))),
             (False, (True,), 171, 221, 56, (2, 1)), (False, (True,), 137, 263, 48, (2, 1)))
    for f, logs, first, last, most, tiling in small:
        if f == forward and log in logs and first <= N <= last and per_sm <= most:
            return tiling
    if not forward and 73 <= N <= 127:
        return (4, 1) if log else (8, 2) if per_sm <= 512 else None
    if forward and 25 <= N <= 39:
        if per_sm <= 128 or per_sm <= 256 and N >= 31 or per_sm <= 512 and N >= 35:
            return (8, 1)
        if per_sm <= 1024 or N >= (35 if log else 31):
            return (16, 2)
    return None


def before_grids16b(dispatch, set_attr=setattr):
    """Patch `dispatch` as its first ROWS_PEEL16_GRIDS had it (2026-12-07, tree cd142b2), which
    bench/results/h100/probe_rows_h100_grids16_{fwd,bwd}_check.log ran: the forward of 31-39 values (32 lanes) at 16
    rows and 2 warps from 128 rows an SM, not at 8 rows and 1 warp to 256 (31-39) and 512 (35-39) rows an SM, the
    entries that the check's figures added; `patched_within(dispatch, before_grids16b)`."""
    grids = dispatch.ROWS_PEEL16_GRIDS
    set_attr(dispatch, "ROWS_PEEL16_GRIDS", {(False, 128): grids[(False, 128)], (True, 32): tuple(
        entry for entry in grids[(True, 32)] if entry[3] not in (256, 512))})


def before_grids16c(dispatch, set_attr=setattr):
    """Patch `dispatch` as ROWS_PEEL16_GRIDS was before its small-grid entries (tree 79bda00; 2026-12-07): only the
    32-lane forward's and the 128-lane backward's entries, as bench/results/h100/probe_rows_h100_peel16_lanes_*.log
    ran; `patched_within(dispatch, before_grids16c)`."""
    grids = dispatch.ROWS_PEEL16_GRIDS
    set_attr(dispatch, "ROWS_PEEL16_GRIDS", {key: grids[key] for key in ((True, 32), (False, 128))})


def before_grids16d(dispatch, set_attr=setattr):
    """Patch `dispatch` as ROWS_PEEL16_GRIDS was before the 256-lane forward's entry and the 64-lane softmax
    backward's (tree cfb4108; 2026-12-07), as bench/results/h100/probe_rows_h100_grids16c_*_check.log,
    probe_rows_h100_peel16_256_fwd_even.log and probe_rows_h100_peel16_64_bwd_softmax.log ran (and before
    before_grids16e's entries); `patched_within(dispatch, before_grids16d)`."""
    before_grids16e(dispatch, set_attr)
    grids = dict(dispatch.ROWS_PEEL16_GRIDS)
    del grids[(True, 256)]
    grids[(False, 64)] = tuple(entry for entry in grids[(False, 64)] if entry[0] != (False,))
    set_attr(dispatch, "ROWS_PEEL16_GRIDS", grids)


def before_grids16e(dispatch, set_attr=setattr):
    """Patch `dispatch` as ROWS_PEEL16_GRIDS was before the 64-lane softmax backward of 41-47 values took 16 rows and
    2 warps to 64 rows an SM (tree 20c45e9; 2026-12-07), as bench/results/h100/probe_rows_h100_grids16d_*_check.log
    ran (and before before_grids16f's entries); `patched_within(dispatch, before_grids16e)`."""
    before_grids16f(dispatch, set_attr)
    grids = dict(dispatch.ROWS_PEEL16_GRIDS)
    grids[(False, 64)] = tuple(entry for entry in grids[(False, 64)] if entry[0] != (False,) or entry[3] != 64)
    set_attr(dispatch, "ROWS_PEEL16_GRIDS", grids)


def before_grids16f(dispatch, set_attr=setattr):
    """Patch `dispatch` as ROWS_PEEL16_GRIDS was before the 256-lane forward took 2 rows a program to 56 and 72 rows an
    SM (171-263 and 211-263 values) and the 64-lane softmax backward 16 rows and 2 warps to 32, 40 and 56 rows an SM
    (41-71, 41-69 and 41-53 values) (tree 475c8f5; 2026-12-07), as the logs behind those entries ran
    (bench/results/h100/probe_rows_h100_peel16_256_fwd_bounds.log, _peel16_64_bwd_61.log);
    `patched_within(dispatch, before_grids16f)`."""
    before_grids16g(dispatch, set_attr)
    grids = dict(dispatch.ROWS_PEEL16_GRIDS)
    grids[(True, 256)] = tuple(entry for entry in grids[(True, 256)] if entry[3] == 48)
    grids[(False, 64)] = tuple(entry for entry in grids[(False, 64)] if entry[0] != (False,) or entry[3] in (48, 64))
    set_attr(dispatch, "ROWS_PEEL16_GRIDS", grids)


def before_grids16g(dispatch, set_attr=setattr):
    """Patch `dispatch` as ROWS_PEEL16_GRIDS was before the 256-lane forward of 221-263 values took 2 rows a program to
    80 rows an SM (tree 5d675e5; 2026-12-07), as the logs behind that entry ran
    (bench/results/h100/probe_rows_h100_peel16_256_fwd_bounds2.log, _bounds3.log), and before before_grids16h's
    entries; `patched_within(dispatch, before_grids16g)`."""
    before_grids16h(dispatch, set_attr)
    grids = dict(dispatch.ROWS_PEEL16_GRIDS)
    grids[(True, 256)] = tuple(entry for entry in grids[(True, 256)] if entry[3] != 80)
    set_attr(dispatch, "ROWS_PEEL16_GRIDS", grids)


def before_grids16h(dispatch, set_attr=setattr):
    """Patch `dispatch` as ROWS_PEEL16_GRIDS was before the log_softmax backward took 4 rows a program to 88 rows an SM
    in 64 lanes (55-71 values) and 2 rows to 56 in 256 lanes (171-221) (tree cfe0238; 2026-12-07), as
    bench/results/h100/probe_rows_h100_peel16_bwd_log_bounds.log and probe_rows_h100_peel16_256_fwd_bounds4.log ran;
    `patched_within(dispatch, before_grids16h)`."""
    grids = dict(dispatch.ROWS_PEEL16_GRIDS)
    grids[(False, 64)] = tuple(entry for entry in grids[(False, 64)] if entry[0] != (True,) or entry[3] != 88)
    grids[(False, 256)] = tuple(entry for entry in grids[(False, 256)] if entry[3] != 56)
    set_attr(dispatch, "ROWS_PEEL16_GRIDS", grids)
