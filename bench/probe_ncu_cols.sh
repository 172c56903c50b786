#!/usr/bin/env bash
# Probe (GPU, Nsight Compute): a columns plan (kernels/columns.py) as bench/probe_cols_meta.py makes it, one variant
# after another (SPECS: its KEY=VALUE,... specs, ';' between them), the third launch of each kernel named *KERNEL*:
# speed of light, compute and memory workload, occupancy, warp states, schedulers, instructions. The question
# (NOTES, "The 16-bit split forward's stats launch"): why does its first launch read x at half the copy's rate?
#     DTYPE=bfloat16 SHAPE=1x8192x8192 KERNEL=stats SPECS='first=1;first=1,ONE_EXP=1' bash bench/probe_ncu_cols.sh
set -u
cd "$(dirname "$0")/.."
NCU=${NCU:-ncu}
DTYPE=${DTYPE:-bfloat16} SHAPE=${SHAPE:-1x8192x8192} KERNEL=${KERNEL:-stats} SPECS=${SPECS:-first=1}
SECTIONS="--section SpeedOfLight --section ComputeWorkloadAnalysis --section MemoryWorkloadAnalysis --section Occupancy
 --section WarpStateStats --section SchedulerStats --section InstructionStats"
IFS=';' read -ra specs <<< "$SPECS"
for i in "${!specs[@]}"; do
  echo "### $DTYPE $SHAPE, variant '${specs[$i]}': kernels named *$KERNEL*, third launch"
  $NCU -k regex:"$KERNEL" --launch-skip 2 --launch-count 1 $SECTIONS python3 -c "
import sys
sys.path.insert(0, 'bench')
import torch, probe_cols_meta, tune
B, N, T = map(int, '$SHAPE'.split('x'))
x = torch.randn(B, N, T, device='cuda', dtype=torch.$DTYPE) * 3
plan = probe_cols_meta.plan(B, N, T, '$DTYPE', 'fwd', torch.cuda.get_device_properties(0).multi_processor_count,
                            '${specs[$i]}', 'H200')
for _ in range(3):
    tune.run_plan(plan, {'x': x}, torch.empty_like(x))
torch.cuda.synchronize()
"
done
