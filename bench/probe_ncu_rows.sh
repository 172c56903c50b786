#!/usr/bin/env bash
# Probe (GPU, Nsight Compute): softmax_fwd_rows on the bf16 softmax forward of a peeled 8191 x 16385 (rows
# that do not start 16-byte aligned) and an aligned 8192 x 16384, as dispatch plans them for this GPU (and,
# with VARIANT, the peeled one re-flagged as bench/probe_coop_tilings.py's --variants, e.g. num_warps=16):
# registers, occupancy, DRAM throughput, instructions. The question (NOTES, "Unaligned rows' edges"): why
# the peeled rows run so far below the aligned ones.
#     bash bench/probe_ncu_rows.sh > probe_ncu_rows.log 2>&1
set -u
cd "$(dirname "$0")/.."
NCU=${NCU:-ncu}
SCRIPT='
import os, sys, torch
sys.path.insert(0, "bench")
import probe_coop_tilings as P, tune
from multisoftmax import dispatch
gpu = dispatch.tuned_gpu(torch.cuda.get_device_name())
sms = torch.cuda.get_device_properties(0).multi_processor_count
cases = [(8191, 16385, "dispatch"), (8192, 16384, "dispatch")]
if os.environ.get("VARIANT"):
    cases.insert(1, (8191, 16385, os.environ["VARIANT"]))
for M, N, spec in cases:
    x, y, dy, out, bufs, nbytes = tune.make_inputs(M, N, torch.bfloat16, "fwd", False)
    p = (P._plan(M, N, "bfloat16", "fwd", False, sms, gpu) if spec == "dispatch"
         else P.variant(spec, M, N, "bfloat16", "fwd", False, sms, gpu))
    print(M, N, spec, P.describe(p), flush=True)
    tune.run_plan(p, bufs, out)
    torch.cuda.synchronize()
'
SECTIONS="--section SpeedOfLight --section MemoryWorkloadAnalysis --section Occupancy --section LaunchStats --section WarpStateStats --section SchedulerStats --section ComputeWorkloadAnalysis --section InstructionStats"
$NCU -k regex:softmax_fwd_rows $SECTIONS python3 -c "$SCRIPT"
