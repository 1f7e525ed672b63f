#!/usr/bin/env bash
# `xmltrain train` on simulated GPUs (the -DXMLT_CUDA=SIM build), end to end on Bibtex, for what
# gpu_sim_train_test.sh leaves out, each against the same run on CPU devices at the same seed
# (P@1 within 0.02 and training loss within 1e-3 relative at every evaluation: the merges sum in
# another order on another backend):
# - every other --algo (elastic, adasum, sync, crossbow) on cuda:0,cuda:1 against cpu:2;
# - adaptive on the logical devices of one GPU (cuda:0x2) and on the mixed cuda:0,cpu:1, against
#   cpu:2;
# - --math tf32 and --math bf16 on cuda:0 against fp32 on cpu:1 (P@1 within 0.03, training loss
#   within 2% relative), the two different from each other (each reaches cuBLAS); tf32 refused
#   when a CPU is among the devices;
# - --weights bf16 for single, adasum and crossbow against fp32 weights (merged on the host);
# - --lr auto on cuda:0 searches there.
# Two epochs each (P@1 is still that of the most frequent label after one; after two it is not).
# Usage: gpu_sim_algos_test.sh XMLTRAIN BIBTEX_DIR
set -euo pipefail
source "$(dirname "$0")/gpu_sim_common.sh" "$1" "$2" 2

for algo in elastic adasum sync crossbow; do
  "$xmltrain" train "${common[@]}" --algo "$algo" --devices cpu:2 --metrics "${algo}_cpu.jsonl" > /dev/null
  "$xmltrain" train "${common[@]}" --algo "$algo" --devices cuda:0,cuda:1 --metrics "${algo}_cuda.jsonl" > /dev/null
  close_runs "${algo}_cpu.jsonl" "${algo}_cuda.jsonl" "$algo cpu:2 / cuda:0,cuda:1" 0.02 1e-3
done

"$xmltrain" train "${common[@]}" --algo adaptive --devices cpu:2 --metrics adaptive_cpu.jsonl > /dev/null
"$xmltrain" train "${common[@]}" --algo adaptive --devices cuda:0x2 --metrics adaptive_logical.jsonl > /dev/null
close_runs adaptive_cpu.jsonl adaptive_logical.jsonl "adaptive cpu:2 / cuda:0x2" 0.02 1e-3
"$xmltrain" train "${common[@]}" --algo adaptive --devices cuda:0,cpu:1 --metrics adaptive_mixed.jsonl > /dev/null
close_runs adaptive_cpu.jsonl adaptive_mixed.jsonl "adaptive cpu:2 / cuda:0,cpu:1" 0.02 1e-3

"$xmltrain" train "${common[@]}" --algo single --devices cpu:1 --metrics single_cpu.jsonl > /dev/null
any_math=("${common[@]:0:${#common[@]}-2}")  # common without its closing --math fp32
for math in tf32 bf16; do
  "$xmltrain" train "${any_math[@]}" --algo single --devices cuda:0 --math "$math" --metrics "single_$math.jsonl" \
    > /dev/null
  close_runs single_cpu.jsonl "single_$math.jsonl" "single cpu:1 fp32 / cuda:0 $math" 0.03 0.02
done
python3 - single_tf32.jsonl single_bf16.jsonl <<'PY' || fail "--math tf32 and bf16 trained the same model"
import json, sys
tf32, bf16 = ([json.loads(l) for l in open(f)] for f in sys.argv[1:3])
assert [r["train_loss"] for r in tf32] != [r["train_loss"] for r in bf16]
print(f"tf32 and bf16 differ: last training loss {tf32[-1]['train_loss']:.6f} / {bf16[-1]['train_loss']:.6f}")
PY

# The weights in bf16 (--weights bf16, merged on the host through bf16 mirrors) for the merges
# whose bf16 paths differ most (the one replica copied as a stream, Adasum's passes, the elastic
# force's stochastic rounding), against the same runs with fp32 weights merged on the host.
for run in "single cuda:0" "adasum cuda:0,cuda:1" "crossbow cuda:0,cuda:1"; do
  read -r algo devices <<< "$run"
  "$xmltrain" train "${any_math[@]}" --algo "$algo" --devices "$devices" --math bf16 --merge-on host --weights fp32 \
    --metrics "${algo}_w32.jsonl" > /dev/null 2>&1
  "$xmltrain" train "${any_math[@]}" --algo "$algo" --devices "$devices" --math bf16 --weights bf16 \
    --metrics "${algo}_w16.jsonl" > /dev/null 2> "${algo}_w16.err"
  grep -q "weights in bf16" "${algo}_w16.err" || { cat "${algo}_w16.err"; fail "$algo: --weights bf16 not taken"; }
  close_runs "${algo}_w32.jsonl" "${algo}_w16.jsonl" "$algo $devices fp32 weights / bf16 weights" 0.03 0.02
done

# --lr auto searches on the GPU when every device is one.
"$xmltrain" train --train "$data/train.txt" --test "$data/test.txt" --epochs 1 --seed 1 --hidden 128 --devices cuda:0 --lr auto \
  --ranker off > lr_auto.out 2> lr_auto.err
grep -q "held out, on cuda:0," lr_auto.err || { cat lr_auto.err; fail "--lr auto did not search on cuda:0"; }
python3 - lr_auto.out <<'PY' || fail "the summary does not say where --lr auto searched"
import json, sys
summary = json.loads(open(sys.argv[1]).read().strip().splitlines()[-1])
assert summary["lr_search"]["device"] == "cuda:0", summary["lr_search"]
print(f"--lr auto on cuda:0 picked {summary['lr_search']['picked']}")
PY

# A CPU has no TF32: said before anything is loaded, with exit 2.
set +e
"$xmltrain" train "${any_math[@]}" --devices cuda:0,cpu:1 --algo adaptive --math tf32 > tf32_cpu.out 2> tf32_cpu.err
status=$?
set -e
[[ $status -eq 2 ]] || fail "--math tf32 with a CPU device gave exit $status, not 2"
grep -q -- "--math tf32 is for CUDA devices; cpu:0 computes in fp32 or bf16" tf32_cpu.err ||
  { cat tf32_cpu.err; fail "the refusal of tf32 on a CPU does not say why"; }
