#!/usr/bin/env bash
# The Adaptive SGD paper's experiments on EURLEX57K, as figures: time to accuracy of one device,
# elastic and adaptive SGD (the paper's Figures 6 and 7, and the batch trace of Figure 12), the beta
# sweep (Figure 10b), the perturbation sweep (Figure 11), and the number of devices (2, 4, 8, with
# one device for reference) under two heterogeneity profiles, fixed speeds and the gamma model
# (Figure 8 and Figure 6's panels per device count).
#
# Every study is a scripts/sweep.py run of a file in scripts/experiments/eurlex57k/, on the virtual
# clock (simulated time, independent of the machine's load); then scripts/report.py and
# scripts/plot.py write OUTDIR/STUDY/{index.jsonl,runs/*.jsonl,report.md,figures/*.png}.
# The sweeps are resumable: running the script again runs only what is missing, and a configuration
# shared by two studies (the default adaptive run, say) trains once (sweep.py --reuse).
#
# Usage: scripts/experiments/eurlex57k-figures.sh [OUTDIR]     (default docs/experiments/eurlex57k)
# Environment:
#   EPOCHS        epochs of every run (default 20, as docs/experiments/eurlex57k.md; 10 halves the runtime)
#   JOBS          runs at once (default 2), each on one thread
#   NICE          niceness of the training runs (default 19, so that other work goes first)
#   XMLT_DATA_DIR a folder holding eurlex57k/{train,val}.txt.gz (default ../shared/data beside the
#                 checkout); the test split is not read
#   XMLT_BUILD_DIR (default build); the binary is built with scripts/build.sh when missing
set -euo pipefail
cd "$(dirname "$0")/../.."
out=${1:-docs/experiments/eurlex57k}
epochs=${EPOCHS:-20}
jobs=${JOBS:-2}
niceness=${NICE:-19}
data=${XMLT_DATA_DIR:-../shared/data}/eurlex57k
build_dir=${XMLT_BUILD_DIR:-build}
xmltrain=$build_dir/apps/xmltrain
for file in train.txt.gz val.txt.gz; do
  if [[ ! -f $data/$file ]]; then
    echo "eurlex57k-figures.sh: $data/$file not found (set XMLT_DATA_DIR to the folder holding eurlex57k/)" >&2
    exit 2
  fi
done
[[ -x $xmltrain ]] || XMLT_BUILD_DIR=$build_dir bash scripts/build.sh
python=${PYTHON:-python3}
started=$SECONDS

# The studies, in order of importance: if the run is cut short, the first figures are complete.
studies=(time-to-accuracy devices beta perturbation)
done_dirs=()
for study in "${studies[@]}"; do
  reuse=()
  for dir in "${done_dirs[@]}"; do reuse+=(--reuse "$dir"); done
  echo "== $study ($((SECONDS - started)) s so far)" >&2
  # Exit code 1 (some run failed) still leaves the others to report; 2 is a usage error.
  code=0
  nice -n "$niceness" "$python" scripts/sweep.py --config "scripts/experiments/eurlex57k/$study.toml" \
    --out "$out/$study" --train "$data/train.txt.gz" --test "$data/val.txt.gz" --xmltrain "$xmltrain" \
    --fixed epochs="$epochs" -j "$jobs" --threads 1 "${reuse[@]}" || code=$?
  [[ $code -le 1 ]] || exit "$code"
  done_dirs+=("$out/$study")
done

# Reports and figures. The target of each study is 95% of its lowest best P@1 (report.py's default).
"$python" scripts/report.py "$out/time-to-accuracy" --figures time,megabatch,batch-trace
"$python" scripts/report.py "$out/beta" --group-by beta --baseline beta=8 --figures batch-beta,megabatch
"$python" scripts/report.py "$out/perturbation" --group-by variant --baseline default \
  --figures perturbation,megabatch,batch-trace
# Devices: adaptive against elastic within each device count and profile; the figures split the
# runs by algorithm and profile (one line per device count) and by device count (one panel each).
"$python" scripts/report.py "$out/devices" --group-by algo --no-figures
figures=()
gamma=cvb:vmach=0.6,vtask=0.1
for algo in adaptive elastic; do
  "$python" scripts/plot.py "$out/devices" --kind devices --where algo=$algo --where hetero=default \
    --title "Devices, speeds 1 to 1.32: $algo" --out "$out/devices/figures/devices-$algo-speeds.png" >/dev/null
  "$python" scripts/plot.py "$out/devices" --kind devices --where algo=$algo --where hetero=$gamma \
    --title "Devices, gamma model: $algo" --out "$out/devices/figures/devices-$algo-gamma.png" >/dev/null
  figures+=("devices-$algo-speeds" "devices-$algo-gamma")
done
for count in 2 4 8; do
  for profile in speeds gamma; do
    name="$count devices, $profile"
    "$python" scripts/plot.py "$out/devices" --kind time --group-by algo --where "variant=$name" \
      --title "Time to accuracy, $name" --out "$out/devices/figures/time-$count-$profile.png" >/dev/null
    figures+=("time-$count-$profile")
  done
done
{
  echo "## Figures"
  echo
  for figure in "${figures[@]}"; do echo "![$figure](figures/$figure.png)"; echo; done
} >>"$out/devices/report.md"

echo "eurlex57k-figures.sh: $((SECONDS - started)) s ($epochs epochs a run); reports in $out/*/report.md" >&2
