#!/usr/bin/env bash
# --cpu-output dense against sampled on two CPU devices (--algo adaptive), in the same run so the
# ratio holds under a shared machine's load: training samples/s at a generated shape (default the
# full Amazon-670K shape on --rows rows, one epoch), then P@1 after --epochs on each real dataset
# folder given (train.txt, test.txt).
#
# Usage: scripts/bench-cpu-output.sh [--preset amazon670k] [--rows 4096] [--epochs 5] [DATASET_DIR...]
# Environment: XMLT_BUILD_DIR (default build), XMLT_BENCH_DATA (default $XMLT_BUILD_DIR/bench-data).
set -euo pipefail
cd "$(dirname "$0")/.."

preset=amazon670k
rows=4096
epochs=5
datasets=()
while [[ $# -gt 0 ]]; do
  case "$1" in
    --preset) preset=$2; shift 2 ;;
    --rows) rows=$2; shift 2 ;;
    --epochs) epochs=$2; shift 2 ;;
    -h|--help) sed -n '2,9p' "$0"; exit 0 ;;
    *) datasets+=("$1"); shift ;;
  esac
done

build_dir=${XMLT_BUILD_DIR:-build}
xmltrain=$build_dir/apps/xmltrain
data=${XMLT_BENCH_DATA:-$build_dir/bench-data}/$preset-full-$rows
if [[ ! -f $data/train.txt ]]; then
  mkdir -p "$data"
  "$xmltrain" gen --preset "$preset" --scale 1 --rows "$rows" --test-rows 256 --seed 1 --out "$data" >/dev/null
fi

# The summary (the last line of stdout): its field $1, or samples/s of training.
field() { python3 -c 'import json,sys; print(json.loads(sys.stdin.readlines()[-1])[sys.argv[1]])' "$1"; }
rate() { python3 -c 'import json,sys; s=json.loads(sys.stdin.readlines()[-1]); print(round(s["train_samples"]/s["train_time_s"], 1))'; }

two_cpus=(--algo adaptive --devices cpu:2 --clock wall --batch 256 --mega-batch 8)
declare -A speed
for output in dense sampled; do
  summary=$("$xmltrain" train --train "$data/train.txt" --test "$data/test.txt" "${two_cpus[@]}" \
    --cpu-output "$output" --epochs 1 --eval-every end 2>/dev/null)
  speed[$output]=$(echo "$summary" | rate)
  echo "$preset x$rows rows, --cpu-output $output: ${speed[$output]} samples/s"
done
echo "sampled/dense: $(python3 -c "print(round(${speed[sampled]}/${speed[dense]}, 2))")"

for dir in "${datasets[@]}"; do
  for output in dense sampled; do
    summary=$("$xmltrain" train --train "$dir/train.txt" --test "$dir/test.txt" --algo adaptive --devices cpu:2 --clock wall \
      --cpu-output "$output" --epochs "$epochs" 2>/dev/null)
    echo "$(basename "$dir"), --cpu-output $output, $epochs epochs: the MLP's best P@1 $(echo "$summary" | field mlp_best_p1)," \
      "$(echo "$summary" | rate) samples/s"
  done
done
