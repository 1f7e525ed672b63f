#!/usr/bin/env bash
# The hash-quality table of docs/BENCHMARKS.md (SLIDE section): builds benchmarks/hash_quality and
# runs it at Delicious's shape (983 labels) and at 100,000 labels, both with hidden size 128 and
# a random output layer: the share of each activation's true top-5 logits that SLIDE's tables put
# in its active set, for SimHash and DWTA over K = 4, 6, 8, 9, 12 and L = 10, 25, 50, against a
# random set of the same size. About 3 minutes on two cores after the build.
# Usage: scripts/bench-hash-quality.sh [hash_quality flags, e.g. --queries 200]
set -euo pipefail
cd "$(dirname "$0")/.."
build_dir=${XMLT_BUILD_DIR:-build}
cmake -S . -B "$build_dir" -DCMAKE_BUILD_TYPE=Release >/dev/null
cmake --build "$build_dir" -j"$(nproc)" --target hash_quality
for labels in 983 100000; do
  echo "== $labels labels"
  "$build_dir/benchmarks/hash_quality" --labels "$labels" --dim 128 "$@"
  echo
done
