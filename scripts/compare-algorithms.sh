#!/usr/bin/env bash
# Every algorithm on the same 4 emulated devices (speeds 1,1.1,1.2,1.32, virtual clock with fixed
# row and merge costs) on bibtex, each with the multi-device defaults (--preset default: what the
# end-to-end test holds to 97% of one device), plus three variants with their own flags, reported
# as time to a common target P@1 (scripts/time_to_accuracy.py); and SLIDE (--algo slide), the
# paper's CPU baseline, on one CPU device whose threads share the model, with its own defaults: it
# refuses the emulated devices' flags, so its times are wall-clock seconds on this machine, which
# the report notes, and it gets no speed-up beside the virtual ones.
# Usage: scripts/compare-algorithms.sh [dataset folder, default ../shared/data/bibtex]
set -euo pipefail
cd "$(dirname "$0")/.."
build_dir=${XMLT_BUILD_DIR:-build}
data=${1:-${XMLT_DATA_DIR:-../shared/data}/bibtex}
out=${XMLT_COMPARE_OUT:-$build_dir/compare-all}
XMLT_BUILD_DIR=$build_dir bash scripts/build.sh
mkdir -p "$out"
common=(--devices cpu:4 --speed 1,1.1,1.2,1.32 --clock virtual --row-cost 2e-5 --merge-cost 1e-9
        --eval-every 1)
declare -A flags=(
  [adaptive]="--algo adaptive"
  [adaptive-nesterov]="--algo adaptive --momentum 0.9 --momentum-mode nesterov --local-momentum 0 --pert-thr 0"
  [elastic]="--algo elastic"
  [easgd]="--algo elastic --elastic-alpha 0.25"
  [adasum]="--algo adasum"
  [adasum-dynamic]="--algo adasum --schedule dynamic"
  [sync]="--algo sync"
  [crossbow]="--algo crossbow"
  [slide]="--algo slide"
)
runs=()
for name in adaptive adaptive-nesterov elastic easgd adasum adasum-dynamic sync crossbow slide; do
  run_flags=("${common[@]}")
  [[ $name == slide ]] && run_flags=(--eval-every 1)  # one CPU device: no emulated devices or clock
  # shellcheck disable=SC2086
  "$build_dir/apps/xmltrain" train --train "$data/train.txt" --test "$data/test.txt" ${flags[$name]} \
    "${run_flags[@]}" --metrics "$out/$name.jsonl" > "$out/$name.log" 2>&1
  runs+=("$name=$out/$name.jsonl")
done
{
  echo "Devices: 4 emulated CPU devices (cpu:4, speeds 1,1.1,1.2,1.32, virtual clock) for every run but"
  echo "SLIDE (1 CPU): one CPU device, $(nproc) threads, wall clock."
  echo
  python3 scripts/time_to_accuracy.py "${runs[@]}"
} | tee "$out/report.md"
