#!/usr/bin/env bash
# xmltrain beside the XML libraries the field already uses, on one data set: PECOS XR-Linear,
# Omikuji (Parabel defaults and Bonsai settings) and napkinXC PLT, each with its README defaults
# and the same threads, then `xmltrain train` with no flag but the files, and with the best flags
# found by hand before the first layer's Adagrad. Every system is scored by scripts/peers/xml_metrics.py (checked against
# `xmltrain eval` on xmltrain's models): P@1/3/5, PSP@1/3/5, training, wall and prediction time and
# peak memory, into docs/experiments/peers/SET.json and docs/experiments/peers.md.
# Usage: scripts/compare-peers.sh SET [--systems pecos,omikuji,bonsai,napkinxc,xmltrain,xmltrain-before]
#                                     [--train-rows N [--cut-seed S]]
#   SET: bibtex, delicious (train/test) or eurlex57k (train/val; the test split is kept apart).
#   --train-rows N: every system trains on the same N training rows, drawn at random (seed S,
#   default 1; run several seeds for an interval), and is tested on the whole test split; the
#   figures go to SET-Nrows-seedS.json beside the whole set's.
# Environment: XMLT_DATA_DIR (default ../shared/data beside the checkout), XMLT_BUILD_DIR (default
#   build), XMLT_PEERS_VENV (default build-peers/venv: the pinned libraries of the chosen systems
#   are installed there from the Python package registry on first use, scripts/peers/
#   peer_requirements.py; libpecos brings PyTorch, about 6 GB), XMLT_PEERS_OUT (default
#   docs/experiments/peers).
# Not part of CI: the venv alone takes minutes to install and EURLEX57K's peers minutes to train.
set -euo pipefail
cd "$(dirname "$0")/.."
if [[ $# -lt 1 || $1 == -* ]]; then
  echo "usage: scripts/compare-peers.sh SET [--systems a,b,...] [--train-rows N [--cut-seed S]]" >&2
  exit 2
fi
set_name=$1
shift
data=${XMLT_DATA_DIR:-../shared/data}/$set_name
case $set_name in
  bibtex | delicious) train=$data/train.txt test=$data/test.txt ;;
  eurlex57k) train=$data/train.txt.gz test=$data/val.txt.gz ;;
  *) echo "compare-peers.sh: unknown set '$set_name' (bibtex, delicious or eurlex57k)" >&2; exit 2 ;;
esac
for file in "$train" "$test"; do
  if [[ ! -f $file ]]; then
    echo "compare-peers.sh: $file not found (set XMLT_DATA_DIR to the folder holding $set_name/)" >&2
    exit 2
  fi
done

# Only the chosen systems' libraries are installed (--systems xmltrain needs numpy and scipy alone).
systems=pecos,omikuji,bonsai,napkinxc,xmltrain,xmltrain-before
args=("$@")
for ((i = 0; i < ${#args[@]}; ++i)); do
  case ${args[i]} in
    --systems) systems=${args[i + 1]:-} ;;
    --systems=*) systems=${args[i]#--systems=} ;;
  esac
done
pins=$(python3 scripts/peers/peer_requirements.py pins "$systems")
modules=$(python3 scripts/peers/peer_requirements.py modules "$systems" | paste -sd, -)
venv=${XMLT_PEERS_VENV:-build-peers/venv}
if [[ ! -x $venv/bin/python ]] || ! "$venv/bin/python" -c "import $modules" 2>/dev/null; then
  # shellcheck disable=SC2086  # one pin a line
  echo "compare-peers.sh: installing" $pins "into $venv" >&2
  [[ -x $venv/bin/python ]] || python3 -m venv "$venv"
  # shellcheck disable=SC2086
  "$venv/bin/pip" install --quiet $pins
fi

bash scripts/build-targets.sh xmltrain >/dev/null
xmltrain=${XMLT_BUILD_DIR:-build}/apps/xmltrain
exec "$venv/bin/python" scripts/peers/compare_peers.py "$set_name" "$train" "$test" "$xmltrain" \
  "${XMLT_PEERS_OUT:-docs/experiments/peers}" "$@"
