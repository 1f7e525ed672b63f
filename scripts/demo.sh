#!/usr/bin/env bash
# The main job on built-in data: installs what is missing, builds, generates an Amazon-670K-shaped
# dataset at 1.8% scale (8,828 training rows, 2,446 features, 12,062 labels), trains a sparse MLP
# with Adaptive SGD and with elastic SGD on the same 4 emulated unequal devices (speeds 1, 1.1, 1.2,
# 1.32, virtual clock, evaluated after every mega-batch), prints how soon each reaches a common
# target P@1 (scripts/time_to_accuracy.py), draws P@1 against virtual time for both
# (DIR/time-to-accuracy.png, with scripts/plot.py, when matplotlib can be imported; else says why
# not), then evaluates the adaptive model and predicts. No download; about a minute on 2 cores.
# Usage: scripts/demo.sh [extra train flags for both runs, e.g. --momentum 0 or --epochs 10]
#   --epochs, --mega-batch, --eval-every, --row-cost and --merge-cost given here replace the
#   demo's own values (below).
# Environment: XMLT_BUILD_DIR (default build), XMLT_DEMO_DIR (DIR, default demo-output),
#   PYTHON (an interpreter with matplotlib; else python3, then /usr/bin/python3, are tried).
set -euo pipefail
if [[ ${1:-} == -h || ${1:-} == --help ]]; then
  # The header above, from its usage line: nothing is built or run.
  sed -n '/^# Usage:/,/^set -euo/{/^set -euo/d;s/^# \{0,1\}//;p}' "$0"
  exit 0
fi
cd "$(dirname "$0")/.."
bash scripts/build.sh
xmltrain=${XMLT_BUILD_DIR:-build}/apps/xmltrain
out=${XMLT_DEMO_DIR:-demo-output}
mkdir -p "$out"
scale=0.018

echo "== generating data (amazon670k preset, scale $scale) into $out/"
"$xmltrain" gen --preset amazon670k --scale "$scale" --seed 1 --out "$out"
"$xmltrain" info "$out/train.txt"

# The demo's own flags, each unless the extra arguments give it: 20 epochs, evaluated after each
# mega-batch (the default preset's half epoch, 35 batches here: about 40 points per run), and a fixed cost model for the virtual
# clock (seconds per row and per parameter and replica of a merge, about what 2 cores take here),
# so that both runs are timed alike and the comparison does not depend on the machine's load
# (measured costs, --row-cost 0 --merge-cost 0, are calibrated by each run on its first mega-batch);
# and 128 hidden units, the width those costs were measured for, which keeps the demo to minutes
# (--hidden auto would make this data's layer 1,024 wide).
given() { local flag=$1 arg; shift; for arg in "$@"; do [[ $arg == "$flag" || $arg == "$flag="* ]] && return 0; done; return 1; }
own=()
for flag_value in "--epochs 20" "--eval-every 1" "--row-cost 3e-4" "--merge-cost 5e-10" "--hidden 128"; do
  read -r flag value <<<"$flag_value"
  given "$flag" "$@" || own+=("$flag" "$value")
done
devices=(--devices cpu:4 --speed "1,1.1,1.2,1.32" --clock virtual)

runs=()
for algo in adaptive elastic; do
  echo "== training --algo $algo on 4 emulated devices (${devices[*]} ${own[*]}${*:+ $*})"
  echo "   metrics in $out/$algo.jsonl, model in $out/$algo.xmlt, log in $out/$algo.log"
  "$xmltrain" train --train "$out/train.txt" --test "$out/test.txt" --algo "$algo" "${devices[@]}" "${own[@]}" \
    --metrics "$out/$algo.jsonl" --model "$out/$algo.xmlt" "$@" > "$out/$algo.log"
  grep '^epoch' "$out/$algo.log" | tail -n 1 || true
  runs+=("$algo=$out/$algo.jsonl")
done

echo "== time to accuracy (training time in virtual seconds, wall seconds beside; also in $out/time-to-accuracy.md)"
python3 scripts/time_to_accuracy.py --clock virtual "${runs[@]}" | tee "$out/time-to-accuracy.md"

rm -f "$out/time-to-accuracy.png"
plot_python=""
for candidate in "${PYTHON:-}" python3 /usr/bin/python3; do
  if [[ -n $candidate ]] && "$candidate" -c "import matplotlib" 2>/dev/null; then
    plot_python=$candidate
    break
  fi
done
if [[ -n $plot_python ]]; then
  "$plot_python" scripts/plot.py "${runs[@]/#/--metrics=}" --clock virtual --kind time --out "$out/time-to-accuracy.png" \
    --title "Amazon-670K-shaped (scale $scale), 4 devices, speeds 1-1.32" >/dev/null
  echo "== figure: $out/time-to-accuracy.png (P@1 against virtual time, both runs)"
else
  echo "== figure skipped: matplotlib cannot be imported by ${PYTHON:+$PYTHON, }python3 or /usr/bin/python3;" \
       "install python3-matplotlib (scripts/setup.sh) or set PYTHON to an interpreter that has it"
fi

echo "== evaluating the saved adaptive model and predicting the first rows"
"$xmltrain" eval --model "$out/adaptive.xmlt" --test "$out/test.txt"
"$xmltrain" predict --model "$out/adaptive.xmlt" --input "$out/test.txt" --top-k 5 --output "$out/predictions.txt"
head -n 3 "$out/predictions.txt"
