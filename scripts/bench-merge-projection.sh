#!/usr/bin/env bash
# The projected merge times of docs/benchmarks/merging.md ("Merge time on GPUs: projections"): builds
# merge_projection (benchmarks/) in the simulated-GPU build, as scripts/test-gpu-sim.sh does,
# runs it on 4 and on 8 simulated GPUs, one Amazon-670K-sized replica each, under the pcie4 and
# nvlink4 link models, and writes $OUT (default docs/merge-projection/): merge_projection.csv,
# table.md and merge_time.png. These are projections from the model of gpusim/timing.h, not
# measurements; on a card, scripts/gpu-check.sh bench measures the same merges (bench_cuda's
# CudaMerge) and its figures replace them. The simulated kernels run on the CPU: at the full size
# this takes about 9 minutes on two cores (Adasum's tree is the slowest to simulate, 1 min at 8
# GPUs), and about 12 GB of memory for 8 GPUs.
# Usage: scripts/bench-merge-projection.sh [merge_projection flags, e.g. --floats 10000000]
set -euo pipefail
cd "$(dirname "$0")/.."
build=${XMLT_SIM_BUILD_DIR:-build-sim}
out=${OUT:-docs/merge-projection}
nice -n 10 cmake -S . -B "$build" -DCMAKE_BUILD_TYPE=Release -DXMLT_CUDA=SIM -DXMLT_BUILD_BENCHMARKS=OFF > /dev/null
nice -n 10 cmake --build "$build" -j"$(nproc)" --target merge_projection
mkdir -p "$out"
runs=()
for gpus in 4 8; do
  start=$SECONDS
  XMLT_SIM_GPUS=$gpus nice -n 10 "$build/benchmarks/merge_projection" "$@" > "$out/run-$gpus.csv"
  echo "bench-merge-projection: $gpus GPUs simulated in $((SECONDS - start)) s" >&2
  runs+=("$out/run-$gpus.csv")
done
{
  head -1 "${runs[0]}"
  tail -q -n +2 "${runs[@]}"
} > "$out/merge_projection.csv"
rm -f "${runs[@]}"
python3 scripts/merge-projection-figures.py "$out/merge_projection.csv" --table "$out/table.md" \
  --chart "$out/merge_time.png"
cat "$out/table.md"
