#!/usr/bin/env bash
# Probe (GPU, Nsight Compute): the cooperative forward of bf16 128 x 1048576 (softmax, through
# the torch adapter) beside torch's copy of the same tensor, one launch of each after warm-up:
# speed of light, memory, occupancy, launch, warp-state and scheduler sections. The question
# (NOTES: "T1 margin"): where does the forward of 1M-value rows lose the 10% to the copy?
#     bash bench/probe_ncu.sh > probe_ncu.log 2>&1
set -u
cd "$(dirname "$0")/.."
NCU=${NCU:-ncu}
SCRIPT='
import torch, multisoftmax.torch as mt
x = (torch.randn(128, 1048576, device="cuda") * 2).to(torch.bfloat16)
y = torch.empty_like(x)
for _ in range(3):
    mt.softmax(x)
    y.copy_(x)
torch.cuda.synchronize()
'
SECTIONS="--section SpeedOfLight --section MemoryWorkloadAnalysis --section Occupancy --section LaunchStats --section WarpStateStats --section SchedulerStats"
echo "### the adapter's forward (kernels named *coop*), third launch"
$NCU -k regex:coop --launch-skip 2 --launch-count 1 $SECTIONS python3 -c "$SCRIPT"
echo "### torch's copy_ (kernels named *copy* or *elementwise*), third launch"
$NCU -k regex:'copy|elementwise' --launch-skip 2 --launch-count 1 $SECTIONS python3 -c "$SCRIPT"
