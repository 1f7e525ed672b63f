#!/usr/bin/env bash
# Every CPU benchmark in one run, the figures of docs/benchmarks/2026-11-20-cpu.md: text parsing and cache
# loading (bench_data), training steps on generated data (bench_train), and xmltrain against its
# PyTorch peer (bench-train.sh). Results go to stdout and, as files, to $XMLT_BENCH_OUT (default
# build/bench-results). Usage: scripts/bench-cpu.sh [--quick]
set -euo pipefail
cd "$(dirname "$0")/.."
build_dir=${XMLT_BUILD_DIR:-build}
out=${XMLT_BENCH_OUT:-$build_dir/bench-results}
repetitions=3
[[ "${1:-}" == "--quick" ]] && repetitions=1
bash scripts/setup.sh --with-peers
XMLT_BUILD_DIR=$build_dir bash scripts/build.sh
mkdir -p "$out"

echo "== machine: $(nproc) cores, $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2-)"
for bench in bench_data bench_train; do
  echo "== $bench"
  "$build_dir/benchmarks/$bench" --benchmark_repetitions=$repetitions \
    --benchmark_report_aggregates_only=true --benchmark_out="$out/$bench.json" \
    --benchmark_out_format=json
done
echo "== xmltrain against PyTorch (same data, batch, hidden size, threads, plain SGD)"
for batch in 128 256; do
  XMLT_BUILD_DIR=$build_dir bash scripts/bench-train.sh --preset amazon670k --scale 0.01 \
    --batch $batch --epochs 3 | tee -a "$out/bench-train.txt"
done
XMLT_BUILD_DIR=$build_dir bash scripts/bench-train.sh --preset delicious200k --scale 0.01 \
  --batch 256 --epochs 3 | tee -a "$out/bench-train.txt"
