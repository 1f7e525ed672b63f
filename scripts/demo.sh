#!/usr/bin/env bash
# The main job on built-in data: installs what is missing, builds, generates an Amazon-670K-shaped
# dataset at 1% scale, trains a sparse MLP on the CPU and prints the result. No download needed.
# Usage: scripts/demo.sh [extra train flags, e.g. --epochs 5]
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/build.sh
xmltrain=${XMLT_BUILD_DIR:-build}/apps/xmltrain
out=${XMLT_DEMO_DIR:-demo-output}
mkdir -p "$out"

echo "== generating data (amazon670k preset, scale 0.01) into $out/"
"$xmltrain" gen --preset amazon670k --scale 0.01 --seed 1 --out "$out"
"$xmltrain" info "$out/train.txt"

echo "== training (metrics in $out/metrics.jsonl, model in $out/model.xmlt)"
"$xmltrain" train --train "$out/train.txt" --test "$out/test.txt" \
  --metrics "$out/metrics.jsonl" --model "$out/model.xmlt" "$@" | tee "$out/train.log"

echo "== evaluating the saved model and predicting the first rows"
"$xmltrain" eval --model "$out/model.xmlt" --test "$out/test.txt"
"$xmltrain" predict --model "$out/model.xmlt" --input "$out/test.txt" --top-k 5 --output "$out/predictions.txt"
head -n 3 "$out/predictions.txt"
