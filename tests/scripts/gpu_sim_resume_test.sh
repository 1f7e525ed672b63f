#!/usr/bin/env bash
# Stop, resume and extension through `xmltrain train` with CUDA devices, on simulated GPUs (the
# -DXMLT_CUDA=SIM build), end to end on Bibtex: what the CPU tests demand of the command line.
# - SIGTERM during an adaptive run on cuda:0,cuda:1 ends it with a checkpoint and exit 143; the
#   run resumed from it is the uninterrupted run, record for record (the virtual clock).
# - A run of 1 epoch extended to 2 with --resume is the 2-epoch run, record for record; a run of
#   0.5 epochs (its end cuts a mega-batch, kept open) extended to 2 trains the same rows, its last
#   P@1 within 0.05 of the 2-epoch run's. With the optimizer state in bf16 (--math bf16), and with
#   the weights in bf16 too (--weights bf16, merged on the host), 1 epoch extended to 2 is the
#   2-epoch run too.
# - The only GPU lost in an evaluation: the run checkpoints and stops (exit 1, naming the GPU), as
#   a loss in training does, and the run resumed from it trains to the end.
# Usage: gpu_sim_resume_test.sh XMLTRAIN BIBTEX_DIR
set -euo pipefail
source "$(dirname "$0")/gpu_sim_common.sh" "$1" "$2" 2
# A constant rate: extending a finished run under the default cosine schedule stretches it over
# the new total, so only a constant rate makes the extended run the longer one.
run=(train --train "$data/train.txt" --test "$data/test.txt" --seed 1 --hidden 128 --lr-schedule constant
     --algo adaptive --devices cuda:0,cuda:1
     --speed 1,1.5 --row-cost 1e-5 --merge-cost 1e-9 --mega-batch 8 --eval-every 4)

"$xmltrain" "${run[@]}" --epochs 2 --metrics whole.jsonl > /dev/null

# SIGTERM as soon as the first checkpoint is written (mega-batch 1 of about 10).
"$xmltrain" "${run[@]}" --epochs 2 --checkpoint-dir stopped --checkpoint-every 1 --metrics stopped.jsonl \
  > stopped.out 2> stopped.err &
child=$!
for _ in $(seq 600); do
  [[ -f stopped/checkpoint.xmlc ]] && break
  kill -0 $child 2>/dev/null || break
  sleep 0.1
done
kill -TERM $child 2>/dev/null || true
set +e
wait $child
status=$?
set -e
[[ $status -eq 143 ]] || { cat stopped.err; fail "SIGTERM gave exit $status, not 143 (a run that ends with 0 ignored it)"; }
grep -q "resume with --resume" stopped.err || { cat stopped.err; fail "the stopped run does not say how to resume"; }
"$xmltrain" "${run[@]}" --epochs 2 --resume stopped --metrics stopped.jsonl > /dev/null
same_runs whole.jsonl stopped.jsonl "stopped by SIGTERM and resumed / uninterrupted"

"$xmltrain" "${run[@]}" --epochs 1 --checkpoint-dir one --metrics one.jsonl > /dev/null
"$xmltrain" "${run[@]}" --epochs 2 --resume one --metrics one.jsonl > /dev/null
same_runs whole.jsonl one.jsonl "1 epoch extended to 2 / 2 epochs"

# The optimizer state in bf16 on the GPUs (--math bf16, where --optimizer-state auto keeps it in
# bf16): a run of 1 epoch extended to 2 is the 2-epoch run, record for record.
"$xmltrain" "${run[@]}" --math bf16 --epochs 2 --metrics whole-bf16.jsonl > /dev/null 2> whole-bf16.err
grep -q "optimizer state in bf16" whole-bf16.err || { cat whole-bf16.err; fail "--math bf16 left the GPUs' state in fp32"; }
"$xmltrain" "${run[@]}" --math bf16 --epochs 1 --checkpoint-dir one-bf16 --metrics one-bf16.jsonl > /dev/null 2>&1
"$xmltrain" "${run[@]}" --math bf16 --epochs 2 --resume one-bf16 --metrics one-bf16.jsonl > /dev/null 2>&1
same_runs whole-bf16.jsonl one-bf16.jsonl "bf16 state: 1 epoch extended to 2 / 2 epochs"
# --weights auto keeps fp32 weights where the merges run on the GPUs (which read them in place).
! grep -q "weights in bf16" whole-bf16.err || { cat whole-bf16.err; fail "--weights auto took bf16 on GPU merges"; }

# The weights in bf16 too (--weights bf16, which moves the merges to the host, through bf16
# mirrors): said on the step line and in the summary, and 1 epoch extended to 2 is the 2-epoch run.
"$xmltrain" "${run[@]}" --math bf16 --weights bf16 --epochs 2 --metrics whole-w16.jsonl > whole-w16.out 2> whole-w16.err
grep -q "weights in bf16" whole-w16.err || { cat whole-w16.err; fail "--weights bf16 left the GPUs' weights in fp32"; }
tail -1 whole-w16.out | grep -q '"merge_on":"host"' || { tail -1 whole-w16.out; fail "--weights bf16 merged on the GPUs"; }
"$xmltrain" "${run[@]}" --math bf16 --weights bf16 --epochs 1 --checkpoint-dir one-w16 --metrics one-w16.jsonl > /dev/null 2>&1
# Resumed with --weights auto, which keeps the checkpoint's bf16 weights and merges on the host again.
"$xmltrain" "${run[@]}" --math bf16 --epochs 2 --resume one-w16 --metrics one-w16.jsonl > /dev/null 2>&1
same_runs whole-w16.jsonl one-w16.jsonl "bf16 weights: 1 epoch extended to 2 (--weights auto) / 2 epochs"
# One GPU's bf16 replica, copied into w as a stream (--algo single): its mirror, which the
# checkpoint reads, is the replica's.
single=(train --train "$data/train.txt" --test "$data/test.txt" --seed 1 --hidden 128 --lr-schedule constant
        --algo single --devices cuda:0 --math bf16 --weights bf16 --ranker off)
"$xmltrain" "${single[@]}" --epochs 2 --metrics single-whole.jsonl > /dev/null 2>&1
"$xmltrain" "${single[@]}" --epochs 1 --checkpoint-dir single-one --metrics single-one.jsonl > /dev/null 2>&1
"$xmltrain" "${single[@]}" --epochs 2 --resume single-one --metrics single-one.jsonl > /dev/null 2>&1
# One device runs on the wall clock: its times differ, every figure of the model must not.
python3 - single-whole.jsonl single-one.jsonl <<'PY' || fail "one GPU's bf16 weights: 1 epoch extended to 2 is not the 2-epoch run"
import json, sys
whole, extended = ([json.loads(l) for l in open(f)] for f in sys.argv[1:3])
keys = ("epoch", "train_samples", "train_loss", "loss", "p1", "p3", "p5", "psp1", "psp5")
assert len(whole) == len(extended) == 2, (len(whole), len(extended))
for a, b in zip(whole, extended):
    assert [a.get(k) for k in keys] == [b.get(k) for k in keys], [(k, a.get(k), b.get(k)) for k in keys]
print(f"one GPU's bf16 weights: 1 epoch extended to 2 is the 2-epoch run; last P@1 {whole[-1]['p1']:.4f}")
PY
set +e
"$xmltrain" "${run[@]}" --math bf16 --weights bf16 --merge-on gpus --epochs 1 > /dev/null 2> refused-w16.err
status=$?
set -e
[[ $status -eq 2 ]] && grep -q "merges the replicas on the host" refused-w16.err ||
  { cat refused-w16.err; fail "--weights bf16 --merge-on gpus gave exit $status"; }

"$xmltrain" "${run[@]}" --epochs 0.5 --checkpoint-dir half --metrics half.jsonl > /dev/null
"$xmltrain" "${run[@]}" --epochs 2 --resume half --metrics half.jsonl > /dev/null
python3 - whole.jsonl half.jsonl <<'PY' || fail "0.5 epochs extended to 2 is not close to the 2-epoch run"
import json, sys
whole, half = ([json.loads(l) for l in open(f)][-1] for f in sys.argv[1:3])
assert half["train_samples"] == whole["train_samples"], (half["train_samples"], whole["train_samples"])
assert abs(half["p1"] - whole["p1"]) <= 0.05, (half["p1"], whole["p1"])
print(f"0.5 epochs extended to 2: {half['train_samples']} rows trained, P@1 {half['p1']:.4f} / {whole['p1']:.4f}")
PY

# The only GPU lost in the evaluation after mega-batch 1 (its 155th launch, halfway through it): a checkpoint, exit 1
# naming cuda:0's lost context, the metrics left partial; resumed, the run trains to the end. It
# once stopped with no checkpoint at all.
lost=(train "${common[@]}" --algo single --devices cuda:0 --mega-batch 10 --eval-every 1)
set +e
XMLT_SIM_FAULT_LAUNCH=155@0 "$xmltrain" "${lost[@]}" --checkpoint-dir lost --metrics lost.jsonl > /dev/null 2> lost.err
status=$?
set -e
[[ $status -eq 1 ]] || { cat lost.err; fail "losing the only GPU in an evaluation gave exit $status, not 1"; }
grep -q "device cuda:0 dropped in the evaluation after mega-batch 1 " lost.err ||
  { cat lost.err; fail "the GPU was not lost in the evaluation after mega-batch 1"; }
grep -q "error: every device failed (cuda:0: .*the CUDA context of GPU 0 is lost).*resume with --resume lost" lost.err ||
  { cat lost.err; fail "the stop does not name the lost GPU or how to resume"; }
[[ -f lost/checkpoint.xmlc && -f lost.jsonl.partial && ! -e lost.jsonl ]] ||
  { ls -a . lost; fail "no checkpoint, or the metrics of the stopped run were finished"; }
"$xmltrain" "${lost[@]}" --resume lost --metrics lost.jsonl > /dev/null
python3 - lost.jsonl <<'PY' || fail "the run resumed after losing its GPU in an evaluation did not finish"
import json, sys
last = [json.loads(l) for l in open(sys.argv[1])][-1]
assert last["epoch"] == 2 and not last["devices"][0]["dropped"], last
print(f"the only GPU lost in an evaluation: checkpoint, exit 1; resumed to the end, P@1 {last['p1']:.4f}")
PY
