#!/usr/bin/env bash
# SLIDE's step (--algo slide) against the dense CPU step at a full Table 1 shape, on each vector
# path this CPU runs (AVX-512, then AVX2+FMA, as scripts/bench-isa.sh holds them), in one run:
# samples/s of both steps on the same generated rows, batch 256, hidden 128, SLIDE's settings for
# the label count, and the whole-table rebuild that --algo slide pays once a mega-batch. Prints
# one table; the raw JSON stays in the output folder. On an AVX-512 CPU the AVX2 pass is AVX2 code
# on an AVX-512 CPU, not an AVX2 machine: same caches, memory and clock.
#
# Usage: scripts/bench-slide.sh [--out DIR] [--shape amazon670k|delicious200k] [--mega-batch 100]
#   --mega-batch: steps per table rebuild in the "with rebuilds" column (the default preset's
#   cap of 100 batches a merge).
# Environment: XMLT_BUILD_DIR (default build).
set -euo pipefail
cd "$(dirname "$0")/.."

out=""
shape=amazon670k
mega_batch=100
while [[ $# -gt 0 ]]; do
  case "$1" in
    --out) out=$2; shift 2 ;;
    --shape) shape=$2; shift 2 ;;
    --mega-batch) mega_batch=$2; shift 2 ;;
    -h|--help) sed -n '2,12p' "$0"; exit 0 ;;
    *) echo "bench-slide: unknown option '$1' (see --help)" >&2; exit 2 ;;
  esac
done
case "$shape" in
  amazon670k|delicious200k) ;;
  *) echo "bench-slide: --shape must be amazon670k or delicious200k, not '$shape'" >&2; exit 2 ;;
esac
if ! [[ $mega_batch =~ ^[1-9][0-9]*$ ]]; then
  echo "bench-slide: --mega-batch must be a positive integer, not '$mega_batch'" >&2
  exit 2
fi
build_dir=${XMLT_BUILD_DIR:-build}
out=${out:-$build_dir/bench-slide}
mkdir -p "$out"
cmake --build "$build_dir" -j"$(nproc)" --target bench_train >&2

source scripts/isa-paths.sh
echo "CPU: $(lscpu | sed -n 's/^Model name: *//p'), $(nproc) threads; load before: $(cut -d' ' -f1-3 /proc/loadavg)" | tee "$out/machine.txt"
for path in "${isa_paths[@]}"; do
  echo "bench-slide: $path: $(env_for "$path")" >&2
  env $(env_for "$path") "$build_dir/benchmarks/bench_train" \
    --benchmark_filter="^((TrainSteps|SampledSteps)/${shape}_full/256/128|SampledTablesRebuild/${shape}_full/128)/" \
    --benchmark_format=json --benchmark_out="$out/slide-$path.json" --benchmark_out_format=json >/dev/null
done
echo "load after: $(cut -d' ' -f1-3 /proc/loadavg)" | tee -a "$out/machine.txt"

python3 - "$out" "$shape" "$mega_batch" "${isa_paths[@]}" <<'PY'
import json, sys
out, shape, mega_batch, paths = sys.argv[1], sys.argv[2], int(sys.argv[3]), sys.argv[4:]
print(f"{shape}, batch 256, hidden 128; rebuilds once every {mega_batch} steps")
print("| path | dense samples/s | SLIDE samples/s | step ratio | rebuild ms | with rebuilds | SLIDE settings |")
print("|---|---|---|---|---|---|---|")
for path in paths:
    run = json.load(open(f"{out}/slide-{path}.json"))
    by = {b["name"].split("/")[0]: b for b in run["benchmarks"]}
    dense, slide, rebuild = by["TrainSteps"], by["SampledSteps"], by["SampledTablesRebuild"]
    step_ms = slide["real_time"]  # milliseconds per step of 256 rows
    with_rebuilds = slide["items_per_second"] * step_ms / (step_ms + rebuild["real_time"] / mega_batch)
    print(f"| {path} | {dense['items_per_second']:.0f} | {slide['items_per_second']:.0f} | "
          f"{slide['items_per_second'] / dense['items_per_second']:.2f}x | {rebuild['real_time']:.0f} | "
          f"{with_rebuilds / dense['items_per_second']:.2f}x | {slide.get('label', '')} |")
PY
