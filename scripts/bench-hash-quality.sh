#!/usr/bin/env bash
# The hash-quality tables of docs/benchmarks/slide.md: builds benchmarks/hash_quality
# and reports, for SimHash and DWTA over K and L, the share of each activation's true top-5 logits
# that SLIDE's tables put in its active set, against a random set of the same size, on
#   - a model trained on Delicious (983 labels, hidden 128: 10 epochs of the dense default),
#     queried by its hidden layer on the first 1,000 test rows; K from 2, since DWTA's 8^K buckets
#     outnumber 983 labels from K = 4;
#   - a random output layer of 100,000 labels (hidden 128) and 200 random ReLU activations.
# About a minute on two cores after the build.
# Usage: scripts/bench-hash-quality.sh [delicious folder, default ../shared/data/delicious]
set -euo pipefail
cd "$(dirname "$0")/.."
build_dir=${XMLT_BUILD_DIR:-build}
data=${1:-${XMLT_DATA_DIR:-../shared/data}/delicious}
out=${XMLT_HASH_QUALITY_OUT:-$build_dir/hash-quality}
cmake -S . -B "$build_dir" -DCMAKE_BUILD_TYPE=Release >/dev/null
cmake --build "$build_dir" -j"$(nproc)" --target xmltrain hash_quality
mkdir -p "$out"
"$build_dir/apps/xmltrain" train --train "$data/train.txt" --test "$data/test.txt" --epochs 10 \
  --model "$out/delicious.model" > "$out/delicious-train.log" 2>&1
echo "== Delicious, trained ($(tail -1 "$out/delicious-train.log" | grep -o '"mlp_best_p1":[0-9.]*'))"
"$build_dir/benchmarks/hash_quality" --model "$out/delicious.model" --data "$data/test.txt" --queries 1000 \
  --k 2,3,4,6,8,9,12
echo
echo "== 100,000 labels, random"
"$build_dir/benchmarks/hash_quality" --labels 100000 --dim 128 --queries 200
