#!/usr/bin/env bash
# Adaptive SGD (with and without its merge perturbation) against elastic SGD on the same engine, each
# with the multi-device defaults (--preset default) and one device for reference: 4 emulated CPU devices on the virtual clock,
# two heterogeneity profiles (fixed speeds 1,1.1,1.2,1.32 as in the paper's Figure 1, and the gamma
# model with vmach=0.6), on bibtex and delicious. Prints, per dataset and profile, the time to a
# target P@1 and the best P@1 of each algorithm over SEEDS seeds, and each speed-up over elastic
# as the paired per-seed ratio with its 95% interval (scripts/time_to_accuracy.py). One seed
# cannot tell a speed-up of a few percent from noise: the default is three.
#
# Usage: scripts/compare-adaptive-elastic.sh [extra train flags for both algorithms]
# Environment: XMLT_DATA_DIR (default ../shared/data), XMLT_BUILD_DIR (default build),
#   XMLT_COMPARE_OUT (default $XMLT_BUILD_DIR/compare), EPOCHS (default 20, the train default),
#   SEEDS (default 1,2,3).
set -euo pipefail
cd "$(dirname "$0")/.."
build_dir=${XMLT_BUILD_DIR:-build}
data_dir=${XMLT_DATA_DIR:-../shared/data}
out=${XMLT_COMPARE_OUT:-$build_dir/compare}
epochs=${EPOCHS:-20}
IFS=, read -r -a seeds <<<"${SEEDS:-1,2,3}"
XMLT_BUILD_DIR=$build_dir bash scripts/build.sh
mkdir -p "$out"
xmltrain=$build_dir/apps/xmltrain

# Same flags for both algorithms; only --algo differs, and every knob of the merge comes from the
# default preset. The row and merge costs are fixed so that reported times do not depend on the
# machine's load (the schedule never does).
# --ranker off: the merges differ in how fast the MLP learns; the ranker would re-score each final
# model alike after training, and hold a tenth of the training rows out of it.
common=(--clock virtual --row-cost 2e-5 --merge-cost 1e-9 --epochs "$epochs" --eval-every 1 --ranker off "$@")
for dataset in bibtex delicious; do
  if [[ ! -f $data_dir/$dataset/train.txt ]]; then
    echo "skipping $dataset: $data_dir/$dataset/train.txt not found" >&2
    continue
  fi
  for profile in speed cvb; do
    case $profile in
      speed) hetero=(--speed 1,1.1,1.2,1.32); label="speeds 1,1.1,1.2,1.32" ;;
      cvb) hetero=(--hetero cvb:vmach=0.6,vtask=0.1); label="gamma model vmach=0.6, vtask=0.1" ;;
    esac
    runs=() summaries=()
    # Adaptive, adaptive without Algorithm 2's perturbation, elastic SGD, and adaptive on one
    # device (the default preset makes it one device's optimizer: no scaling, no global momentum).
    for variant in adaptive adaptive-no-perturbation elastic one-device; do
      case $variant in
        adaptive) flags=(--algo adaptive --devices cpu:4) ;;
        adaptive-no-perturbation) flags=(--algo adaptive --devices cpu:4 --pert-thr 0) ;;
        elastic) flags=(--algo elastic --devices cpu:4) ;;
        one-device) flags=(--algo adaptive --devices cpu:1) ;;
      esac
      # One device runs at the fastest device's speed.
      [[ $variant == one-device && $profile == speed ]] && hetero=(--speed 1)
      for seed in "${seeds[@]}"; do
        run=$out/$dataset-$profile-$variant-seed$seed
        "$xmltrain" train --train "$data_dir/$dataset/train.txt" --test "$data_dir/$dataset/test.txt" \
          "${flags[@]}" "${hetero[@]}" "${common[@]}" --seed "$seed" --metrics "$run.jsonl" > "$run.log" 2>&1
        # The same name for every seed: one configuration, paired seed by seed with elastic's.
        runs+=("$variant=$run.jsonl")
        summaries+=(--summary "$variant=$run.log")
      done
    done
    echo "### $dataset, $label (seeds ${seeds[*]})"
    echo
    python3 scripts/time_to_accuracy.py --clock virtual --baseline elastic "${summaries[@]}" "${runs[@]}"
    echo
  done
done | tee "$out/report.md"
