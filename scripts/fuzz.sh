#!/usr/bin/env bash
# Fuzzes the file readers with libFuzzer (see docs/FUZZING.md): configures build-fuzz/ with clang
# and XMLT_FUZZ=ON, builds the fuzz targets, and runs each target (or the named ones) for a number
# of seconds, starting from its seed corpus in tests/fuzz/corpus/TARGET/.
# Usage: scripts/fuzz.sh [--seconds N] [TARGET...] [-- extra libFuzzer flags]
#   TARGET: xmlrepo_text libsvm_text split_pair binary_cache model_file checkpoint (default: all)
#   --seconds N  per target (default 60)
# New crashing inputs go to BUILD/fuzz-crashes/TARGET/ (printed at the end; the exit status is 1 when
# there are any), inputs that found new coverage to BUILD/fuzz-corpus/TARGET/, logs to
# BUILD/fuzz-logs/. BUILD is $XMLT_FUZZ_BUILD_DIR or build-fuzz; the compiler $CXX or clang++.
set -euo pipefail
cd "$(dirname "$0")/.."

all_targets=(xmlrepo_text libsvm_text split_pair binary_cache model_file checkpoint)
seconds=60
targets=()
extra=()
while [[ $# -gt 0 ]]; do
  case $1 in
    --seconds) seconds=${2:?"--seconds needs a number"}; shift 2 ;;
    --) shift; extra=("$@"); break ;;
    -h|--help) sed -n '2,10p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
    *)
      if [[ ! " ${all_targets[*]} " == *" $1 "* ]]; then
        echo "fuzz.sh: unknown target '$1' (targets: ${all_targets[*]})" >&2
        exit 2
      fi
      targets+=("$1"); shift ;;
  esac
done
[[ ${#targets[@]} -eq 0 ]] && targets=("${all_targets[@]}")
[[ $seconds =~ ^[0-9]+$ && $seconds -gt 0 ]] || { echo "fuzz.sh: --seconds must be a positive integer" >&2; exit 2; }

bash scripts/setup.sh --with-fuzz
compiler=${CXX:-clang++}
if ! command -v "$compiler" >/dev/null; then
  echo "fuzz.sh: needs clang with its libFuzzer runtime (Debian: apt-get install clang libclang-rt-dev)" >&2
  exit 2
fi
build=${XMLT_FUZZ_BUILD_DIR:-build-fuzz}
cmake -S . -B "$build" -DCMAKE_CXX_COMPILER="$compiler" -DCMAKE_BUILD_TYPE=RelWithDebInfo \
  -DXMLT_FUZZ=ON -DXMLT_CUDA=OFF -DXMLT_BUILD_BENCHMARKS=OFF >/dev/null
cmake --build "$build" --target fuzzers -j"$(nproc)"

mkdir -p "$build/fuzz-logs"
summary=()
found=0
for target in "${targets[@]}"; do
  work="$build/fuzz-corpus/$target"
  crashes="$build/fuzz-crashes/$target"
  log="$build/fuzz-logs/$target.log"
  mkdir -p "$work" "$crashes"
  flags=(-max_total_time="$seconds" -timeout=10 -rss_limit_mb=2048 -malloc_limit_mb=512
         -print_final_stats=1 -artifact_prefix="$crashes/")
  # The text readers get their separators and limit values as a dictionary.
  [[ $target == *_text || $target == split_pair ]] && flags+=(-dict=tests/fuzz/text.dict)
  before=$(find "$crashes" -type f | wc -l)
  echo "fuzz.sh: $target for ${seconds}s (log: $log)"
  # New coverage is written to the first corpus directory only; the checked-in seeds stay as they are.
  "$build/tests/fuzz/${target}_fuzz" "${flags[@]}" ${extra[@]+"${extra[@]}"} \
    "$work" "tests/fuzz/corpus/$target" >"$log" 2>&1 || true
  runs=$(grep -o 'stat::number_of_executed_units: [0-9]*' "$log" | tail -n 1 | grep -o '[0-9]*$' || echo "?")
  new=$(( $(find "$crashes" -type f | wc -l) - before ))
  [[ $new -gt 0 ]] && found=1 && grep -m 1 -E "^==[0-9]+==ERROR|runtime error|invariant violated|deadly signal|out-of-memory|timeout" "$log" || true
  summary+=("$(printf '%-14s %6ss %12s runs %3s new crashes' "$target" "$seconds" "$runs" "$new")")
done

echo
printf '%s\n' "${summary[@]}"
if [[ $found -eq 1 ]]; then
  echo "fuzz.sh: new crashing inputs in $build/fuzz-crashes/ (replay one with $build/tests/fuzz/TARGET_fuzz FILE)"
  exit 1
fi
echo "fuzz.sh: no crashes (crashing inputs would be in $build/fuzz-crashes/)"
