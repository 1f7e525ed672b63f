#!/usr/bin/env bash
# The CPU step against its three output GEMMs on each vector path this CPU runs, in one run: the
# step's vector kernels (XMLT_CPU_ISA) and the libraries' kernels (OpenBLAS, oneDNN) held to
# AVX-512, then to AVX2+FMA. On an AVX-512 CPU the second pass is AVX2 code on an AVX-512 CPU, not
# an AVX2 machine: same caches, memory and clock. Prints one table; the raw JSON stays in the
# output folder.
#
# Usage: scripts/bench-isa.sh [--out DIR] [--min-time 5] [--gemm-libraries]
#   --gemm-libraries also times each library's three products (bench_gemm_libraries) per path.
# Environment: XMLT_BUILD_DIR (default build).
set -euo pipefail
cd "$(dirname "$0")/.."

out=""
min_time=5
gemm_libraries=0
while [[ $# -gt 0 ]]; do
  case "$1" in
    --out) out=$2; shift 2 ;;
    --min-time) min_time=$2; shift 2 ;;
    --gemm-libraries) gemm_libraries=1; shift ;;
    -h|--help) sed -n '2,11p' "$0"; exit 0 ;;
    *) echo "bench-isa: unknown option '$1' (see --help)" >&2; exit 2 ;;
  esac
done
build_dir=${XMLT_BUILD_DIR:-build}
out=${out:-$build_dir/bench-isa}
mkdir -p "$out"
targets=(bench_train)
if [[ $gemm_libraries == 1 ]]; then targets+=(bench_gemm_libraries); fi
cmake --build "$build_dir" -j"$(nproc)" --target "${targets[@]}" >&2

source scripts/isa-paths.sh
echo "CPU: $(lscpu | sed -n 's/^Model name: *//p'), $(nproc) threads; load before: $(cut -d' ' -f1-3 /proc/loadavg)" | tee "$out/machine.txt"
for path in "${isa_paths[@]}"; do
  echo "bench-isa: $path: $(env_for "$path")" >&2
  env $(env_for "$path") "$build_dir/benchmarks/bench_train" \
    --benchmark_filter='^(TrainSteps/amazon670k_full/256/128|OutputGemms/256/128/670091)/' \
    --benchmark_min_time="$min_time" --benchmark_format=json --benchmark_out="$out/train-$path.json" \
    --benchmark_out_format=json >/dev/null
  if [[ $gemm_libraries == 1 ]]; then
    env $(env_for "$path") "$build_dir/benchmarks/bench_gemm_libraries" --benchmark_format=json \
      --benchmark_out="$out/gemm-$path.json" --benchmark_out_format=json >/dev/null
  fi
done
echo "load after: $(cut -d' ' -f1-3 /proc/loadavg)" | tee -a "$out/machine.txt"

python3 - "$out" "${isa_paths[@]}" <<'PY'
import json, sys
out, paths = sys.argv[1], sys.argv[2:]
print("| path | cpu_isa | OpenBLAS core | step ms | GEMMs ms | step/GEMMs | step samples/s | GEMM GFLOP/s |")
print("|---|---|---|---|---|---|---|---|")
for path in paths:
    run = json.load(open(f"{out}/train-{path}.json"))
    ctx = run["context"]
    by = {b["name"].split("/")[0]: b for b in run["benchmarks"]}
    step, gemm = by["TrainSteps"], by["OutputGemms"]
    print(f"| {path} | {ctx.get('cpu_isa')} | {ctx.get('openblas_core')} | {step['real_time']:.0f} | "
          f"{gemm['real_time']:.0f} | {step['real_time'] / gemm['real_time']:.3f} | "
          f"{step['items_per_second']:.0f} | {gemm['GFLOP/s']:.0f} |")
for path in paths:
    try:
        run = json.load(open(f"{out}/gemm-{path}.json"))
    except FileNotFoundError:
        continue
    ctx = run["context"]
    print(f"\n{path}: OpenBLAS {ctx.get('openblas_core')}, BLIS {ctx.get('blis_arch')}, oneDNN {ctx.get('onednn_isa')}")
    print("| benchmark | ms | GFLOP/s |")
    print("|---|---|---|")
    for b in run["benchmarks"]:
        if b.get("error_occurred"):
            print(f"| {b['name']} | skipped: {b.get('error_message')} | |")
            continue
        print(f"| {b.get('label') or b['name']} | {b['real_time']:.1f} | {b['GFLOP/s']:.1f} |")
PY
