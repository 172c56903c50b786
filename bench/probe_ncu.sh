#!/usr/bin/env bash
# Probe (GPU, Nsight Compute): the cooperative forward of bf16 128 x 1048576 (softmax, through
# the torch adapter) beside torch's copy of the same tensor, one launch of each after warm-up:
# speed of light, memory, occupancy, launch, warp-state and scheduler sections. The question
# (NOTES: "T1 margin"): where does the forward of 1M-value rows lose the 10% to the copy?
#     bash bench/probe_ncu.sh > probe_ncu.log 2>&1
# DTYPE, M, N and KERNEL (a regex of the adapter's kernel names) pick another case, e.g. the pipelined forward:
#     DTYPE=float32 M=64 KERNEL=pipe bash bench/probe_ncu.sh > probe_ncu_fpipe.log 2>&1
set -u
cd "$(dirname "$0")/.."
NCU=${NCU:-ncu}
DTYPE=${DTYPE:-bfloat16} M=${M:-128} N=${N:-1048576} KERNEL=${KERNEL:-coop}
SCRIPT="
import torch, multisoftmax.torch as mt
x = (torch.randn($M, $N, device='cuda') * 2).to(torch.$DTYPE)"
SCRIPT+='
y = torch.empty_like(x)
for _ in range(3):
    mt.softmax(x)
    y.copy_(x)
torch.cuda.synchronize()
'
SECTIONS="--section SpeedOfLight --section MemoryWorkloadAnalysis --section Occupancy --section LaunchStats --section WarpStateStats --section SchedulerStats"
echo "### $DTYPE $M x $N: the adapter's forward (kernels named *$KERNEL*), third launch"
$NCU -k regex:"$KERNEL" --launch-skip 2 --launch-count 1 $SECTIONS python3 -c "$SCRIPT"
echo "### torch's copy_ (kernels named *copy* or *elementwise*), third launch"
$NCU -k regex:'copy|elementwise' --launch-skip 2 --launch-count 1 $SECTIONS python3 -c "$SCRIPT"
