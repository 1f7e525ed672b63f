#!/usr/bin/env bash
# Time to accuracy at the Amazon-670K shape (135,909 features, 670,091 labels, hidden 128): the
# paper's comparison of one device, elastic SGD, Adaptive SGD on unequal devices and SLIDE, on
# generated rows of that shape, in one figure.
#
# The clocks: `single` and `slide` run on this machine and report wall time. The multi-device runs
# are emulated (4 CPU devices of speeds 1, 1.1, 1.2, 1.32 on the virtual clock), each device given
# the row cost the single run measured here (its training time over its rows), so that an emulated
# device of speed 1 is as fast as this machine's dense step and all four curves share a footing:
# "4 machines like this one" against "this machine". The emulated merges cost --merge-cost per
# parameter and replica (1e-9 s, as scripts/compare-algorithms.sh).
#
# SLIDE runs 5x the dense runs' epochs by default: its step is about 10x the dense one's at this
# shape, so its curve then spans about the same wall time as the dense run's.
#
# Usage: scripts/slide-time-to-accuracy.sh [OUTDIR]   (default build/slide-time-to-accuracy)
#   A run whose metrics file OUTDIR/NAME.jsonl is complete is kept, not run again (the script can be
#   stopped and called again); delete the file to run it afresh.
# Environment: XMLT_TTA_ROWS (training rows, default 8192), XMLT_TTA_EPOCHS (default 5),
#   XMLT_TTA_SLIDE_EPOCHS (default 5 x XMLT_TTA_EPOCHS), XMLT_TTA_EVAL_ROWS (test rows scored at
#   each evaluation, default 500), XMLT_TTA_FIGURE (the PNG, default OUTDIR/time.png),
#   XMLT_BUILD_DIR (default build).
set -euo pipefail
cd "$(dirname "$0")/.."
build_dir=${XMLT_BUILD_DIR:-build}
out=${1:-$build_dir/slide-time-to-accuracy}
rows=${XMLT_TTA_ROWS:-8192}
epochs=${XMLT_TTA_EPOCHS:-5}
slide_epochs=${XMLT_TTA_SLIDE_EPOCHS:-$((5 * epochs))}
eval_rows=${XMLT_TTA_EVAL_ROWS:-500}
figure=${XMLT_TTA_FIGURE:-$out/time.png}
XMLT_BUILD_DIR=$build_dir bash scripts/build-targets.sh xmltrain
xmltrain=$build_dir/apps/xmltrain
mkdir -p "$out"
start=$(date +%s)

data=$out/data-$rows
if [[ ! -f $data/train.txt.xmlb ]]; then
  "$xmltrain" gen --preset amazon670k --scale 1 --rows "$rows" --test-rows 2000 --seed 1 --out "$data" >/dev/null
  # The binary caches, so that no run pays the text parse.
  "$xmltrain" convert "$data/train.txt" >/dev/null
  "$xmltrain" convert "$data/test.txt" >/dev/null
fi
common=(--train "$data/train.txt.xmlb" --test "$data/test.txt.xmlb" --eval-every epoch
        --eval-rows "$eval_rows" --final-eval sample)

train() {  # NAME FLAGS...
  local name=$1
  shift
  if [[ -f $out/$name.jsonl ]]; then
    echo "$name: kept from an earlier call ($out/$name.jsonl)" >&2
    return
  fi
  rm -f "$out/$name.jsonl.partial"
  echo "$name: $*" >&2
  local t0=$SECONDS
  nice "$xmltrain" train "${common[@]}" "$@" --metrics "$out/$name.jsonl" >"$out/$name.out" 2>"$out/$name.log"
  echo "$name: $((SECONDS - t0)) s of wall time" | tee -a "$out/wall.txt" >&2
}

touch "$out/wall.txt"
train single --algo single --epochs "$epochs"
# The dense step's cost per row on this machine, from the single run's own clock.
row_cost=$(python3 -c "
import json, sys
r = [json.loads(l) for l in open(sys.argv[1]) if l.strip()][-1]
print('%.6g' % (r['train_time_s'] / r['train_samples']))" "$out/single.jsonl")
echo "measured dense row cost: $row_cost s" | tee "$out/row-cost.txt" >&2
# SLIDE: DWTA K=8 L=50 (its Amazon-670K setting), active sets padded to 1,000 labels, plain SGD
# at the dense run's rate in plain SGD terms, 0.3 / (1 - 0.9) = 3. The padding unweighted, as
# SLIDE's softmax: at this shape (about 770 padding labels standing for 669,000) the weighted
# padding made the rate-3 run collapse (P@1 0 from epoch 4; docs/benchmarks/slide.md).
train slide --algo slide --lr 3 --slide-weight-padding false --epochs "$slide_epochs"
emulated=(--devices cpu:4 --speed 1,1.1,1.2,1.32 --clock virtual --row-cost "$row_cost" --merge-cost 1e-9)
train elastic --algo elastic --epochs "$epochs" "${emulated[@]}"
train adaptive --algo adaptive --epochs "$epochs" "${emulated[@]}"

{
  echo "Amazon-670K shape, $rows generated training rows, $epochs epochs ($slide_epochs for SLIDE), P@1 on $eval_rows test rows after each epoch."
  echo "single and SLIDE (1 CPU): this machine, wall clock. elastic and adaptive: 4 emulated devices"
  echo "(speeds 1,1.1,1.2,1.32), virtual clock at the single run's measured row cost, $row_cost s."
  echo "Wall time of each run on $(nproc) cores: $(sed 's/$/;/' "$out/wall.txt" | tr '\n' ' ')this call: $(( $(date +%s) - start )) s."
  echo
  python3 scripts/time_to_accuracy.py single="$out/single.jsonl" elastic="$out/elastic.jsonl" \
    adaptive="$out/adaptive.jsonl" slide="$out/slide.jsonl"
} | tee "$out/report.md"
python3 scripts/plot.py --metrics single="$out/single.jsonl" --metrics elastic="$out/elastic.jsonl" \
  --metrics adaptive="$out/adaptive.jsonl" --metrics slide="$out/slide.jsonl" --kind time --out "$figure" \
  --title "Amazon-670K shape, $rows rows (elastic, adaptive: virtual clock)"
