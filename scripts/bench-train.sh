#!/usr/bin/env bash
# Training speed of xmltrain against its PyTorch peer (scripts/peers/torch_mlp.py): same synthetic
# train file, batch, hidden sizes and thread count, in the same run; prints both samples/s and the
# ratio xmltrain/torch (and xmltrain/torch.compile with PyTorch 2), then one JSON summary line.
#
# Usage: scripts/bench-train.sh [--preset amazon670k] [--scale 0.01] [--rows N] [--batch 256]
#                               [--hidden 128] [--threads $(nproc)] [--epochs 3] [--lr LR]
#                               [--math fp32[,bf16]]
#   --rows N keeps the preset's features and labels at --scale but generates only N training rows:
#   `--scale 1 --rows 4096 --epochs 1` measures the full Table 1 shapes in minutes.
#   Both sides run plain SGD (xmltrain with --local-momentum 0). --lr is passed to both sides when given; otherwise each uses its default (speed is the point,
#   the P@1 columns are only a sanity check).
#   --math fp32,bf16 times xmltrain once per output-layer arithmetic, each against the same torch run.
# Environment: XMLT_BUILD_DIR (default build), XMLT_BENCH_DATA (default $XMLT_BUILD_DIR/bench-data,
#   generated data is kept there and reused), PYTHON (an interpreter that can import torch).
set -euo pipefail
cd "$(dirname "$0")/.."

preset=amazon670k
scale=0.01
rows=""
batch=256
hidden=128
threads=$(nproc)
epochs=3
lr=""
maths=fp32
while [[ $# -gt 0 ]]; do
  case "$1" in
    --preset) preset=$2; shift 2 ;;
    --scale) scale=$2; shift 2 ;;
    --rows) rows=$2; shift 2 ;;
    --batch) batch=$2; shift 2 ;;
    --hidden) hidden=$2; shift 2 ;;
    --threads) threads=$2; shift 2 ;;
    --epochs) epochs=$2; shift 2 ;;
    --lr) lr=$2; shift 2 ;;
    --math) maths=$2; shift 2 ;;
    -h|--help) sed -n '2,16p' "$0"; exit 0 ;;
    *) echo "bench-train: unknown option '$1' (see --help)" >&2; exit 2 ;;
  esac
done

build_dir=${XMLT_BUILD_DIR:-build}
data_root=${XMLT_BENCH_DATA:-$build_dir/bench-data}
xmltrain=$build_dir/apps/xmltrain

bash scripts/setup.sh --with-peers
XMLT_BUILD_DIR=$build_dir bash scripts/build.sh

# Debian's python3-torch belongs to the system interpreter; a python3 earlier in PATH (pyenv, a
# virtualenv) may not see it.
if [[ -z "${PYTHON:-}" ]]; then
  PYTHON=python3
  if ! python3 -c 'import torch' 2>/dev/null && [[ -x /usr/bin/python3 ]]; then
    PYTHON=/usr/bin/python3
  fi
fi
"$PYTHON" -c 'import torch' || { echo "bench-train: $PYTHON cannot import torch" >&2; exit 1; }

# The generator is deterministic, so a data folder for (preset, scale, seed) is reused as is.
data_dir=$data_root/$preset-$scale${rows:+-rows$rows}-seed1
rows_args=()
if [[ -n $rows ]]; then rows_args=(--rows "$rows" --test-rows 1000); fi
if [[ ! -s $data_dir/train.txt || ! -s $data_dir/test.txt ]]; then
  echo "bench-train: generating $preset at scale $scale into $data_dir" >&2
  mkdir -p "$data_dir"
  "$xmltrain" gen --preset "$preset" --scale "$scale" ${rows_args[@]+"${rows_args[@]}"} --seed 1 --out "$data_dir" >&2
fi

# The value of `key` in the JSON object on the last non-empty line of stdin, as JSON (strings
# bare), "null" when the key is missing.
json_field() {
  python3 -c '
import json, sys
lines = [l for l in sys.stdin.read().splitlines() if l.strip()]
if not lines:
    sys.exit("bench-train: no output to parse")
value = json.loads(lines[-1]).get(sys.argv[1])
print(value if isinstance(value, str) else json.dumps(value))' "$1"
}
lr_args=()
if [[ -n $lr ]]; then lr_args=(--lr "$lr"); fi

declare -A xmlt_rate xmlt_p1
IFS=, read -r -a math_list <<<"$maths"
for math in "${math_list[@]}"; do
  echo "bench-train: xmltrain ($preset x$scale, batch $batch, hidden $hidden, $threads threads, --math $math)" >&2
  # The torch peer's step: plain SGD on every layer, no dropout (not the CPU defaults' Adagrad).
  xmlt_out=$("$xmltrain" train --train "$data_dir/train.txt" --test "$data_dir/test.txt" \
    --epochs "$epochs" --batch "$batch" --hidden "$hidden" --threads "$threads" --math "$math" \
    --local-momentum 0 --input-optimizer sgd --dropout 0 ${lr_args[@]+"${lr_args[@]}"} --eval-every 0)
  xmlt_rate[$math]=$(json_field samples_per_wall_s <<<"$xmlt_out")
  xmlt_p1[$math]=$(json_field p1 <<<"$xmlt_out")
done

echo "bench-train: torch peer" >&2
torch_out=$("$PYTHON" scripts/peers/torch_mlp.py --train "$data_dir/train.txt" \
  --test "$data_dir/test.txt" --epochs "$epochs" --batch "$batch" --hidden "$hidden" \
  --threads "$threads" ${lr_args[@]+"${lr_args[@]}"})
torch_rate=$(json_field samples_per_s <<<"$torch_out")
torch_p1=$(json_field p1 <<<"$torch_out")
torch_version=$(json_field torch <<<"$torch_out")

# PyTorch 2 also runs the peer under torch.compile (scripts/peers/torch_compile_mlp.py).
compiled_rate=""
compiled_p1=null
if [[ ${torch_version%%.*} -ge 2 ]]; then
  echo "bench-train: torch.compile peer" >&2
  compiled_out=$("$PYTHON" scripts/peers/torch_compile_mlp.py --train "$data_dir/train.txt" \
    --test "$data_dir/test.txt" --epochs "$epochs" --batch "$batch" --hidden "$hidden" \
    --threads "$threads" ${lr_args[@]+"${lr_args[@]}"})
  compiled_rate=$(json_field samples_per_s <<<"$compiled_out")
  compiled_p1=$(json_field p1 <<<"$compiled_out")
fi

ratio() { python3 -c 'import sys; print(round(float(sys.argv[1]) / float(sys.argv[2]), 3))' "$1" "$2"; }
printf '%-16s %14s %8s %8s %14s\n' "" "samples/s" "P@1" "/torch" "/torch.compile"
for math in "${math_list[@]}"; do
  printf '%-16s %14s %8s %8s %14s\n' "xmltrain $math" "${xmlt_rate[$math]}" "${xmlt_p1[$math]}" \
    "$(ratio "${xmlt_rate[$math]}" "$torch_rate")" \
    "$([[ -n $compiled_rate ]] && ratio "${xmlt_rate[$math]}" "$compiled_rate" || echo -)"
done
printf '%-16s %14s %8s\n' "torch" "$torch_rate" "$torch_p1"
if [[ -n $compiled_rate ]]; then printf '%-16s %14s %8s\n' "torch.compile" "$compiled_rate" "$compiled_p1"; fi
for math in "${math_list[@]}"; do
  printf '{"bench":"train","preset":"%s","scale":%s,"batch":%s,"hidden":"%s","threads":%s,"math":"%s",' \
    "$preset" "$scale" "$batch" "$hidden" "$threads" "$math"
  printf '"epochs":%s,"xmltrain_samples_per_s":%s,"torch_samples_per_s":%s,"ratio":%s,' \
    "$epochs" "${xmlt_rate[$math]}" "$torch_rate" "$(ratio "${xmlt_rate[$math]}" "$torch_rate")"
  printf '"xmltrain_p1":%s,"torch_p1":%s,"torch":"%s",' "${xmlt_p1[$math]}" "$torch_p1" "$torch_version"
  printf '"torch_compile_samples_per_s":%s,"ratio_compile":%s,"torch_compile_p1":%s}\n' "${compiled_rate:-null}" \
    "$([[ -n $compiled_rate ]] && ratio "${xmlt_rate[$math]}" "$compiled_rate" || echo null)" "$compiled_p1"
done
