#!/usr/bin/env bash
# Merges on the GPUs (--merge-on auto, the default when every device is a GPU) through
# `xmltrain train` on simulated GPUs (the -DXMLT_CUDA=SIM build), end to end on Bibtex:
# - every --algo on cuda:0,cuda:1 and on the logical devices of one GPU (cuda:0x4; single on
#   cuda:0) equals the same run merged on the host mirrors (--merge-on host): P@1 within 0.005 and
#   the training loss within 1e-4 relative at every evaluation (the sums run in another order);
# - the run says where it merged (the summary's merge_on);
# - --collective nccl equals the ring for the weighted merges (adaptive, sync) on 3 GPUs and on
#   two logical devices of one GPU beside a third;
# - an elastic restart from 4 GPUs to 3: a run checkpointed between mega-batches on
#   cuda:0,cuda:1,cuda:2,cuda:3 goes on with --resume on cuda:0,cuda:1,cuda:2 to the end;
# - a GPU lost in training and in a merge (injected illegal addresses on GPU 1): the others go on;
#   on two GPUs the lone survivor goes on, merging alone.
# Usage: gpu_sim_merge_test.sh XMLTRAIN BIBTEX_DIR
set -euo pipefail
source "$(dirname "$0")/gpu_sim_common.sh" "$1" "$2" 2
export XMLT_SIM_GPUS=4
# The comparisons of two merges take half an epoch (about ten merges, then one evaluation: the
# training loss is what tells two merges apart so early); the restart and the lost GPUs below take
# two epochs.
half_epoch=("${common[@]}")
for i in "${!half_epoch[@]}"; do [[ ${half_epoch[$i]} != --epochs ]] || half_epoch[i + 1]=0.5; done

for algo in adaptive elastic adasum sync crossbow; do
  for devices in cuda:0,cuda:1 cuda:0x4; do
    name=${algo}_${devices//[:,]/_}
    "$xmltrain" train "${half_epoch[@]}" --algo "$algo" --devices "$devices" --merge-on host --metrics "${name}_host.jsonl" \
      > "${name}_host.out"
    "$xmltrain" train "${half_epoch[@]}" --algo "$algo" --devices "$devices" --metrics "${name}_gpus.jsonl" \
      > "${name}_gpus.out"
    close_runs "${name}_host.jsonl" "${name}_gpus.jsonl" "$algo on $devices, host / GPU merges" 0.005 1e-4
    python3 - "${name}_gpus.out" "${name}_host.out" <<'PY' || fail "$algo on $devices: the summary does not say where it merged"
import json, sys
gpus, host = (json.loads(open(f).read().strip().splitlines()[-1]) for f in sys.argv[1:3])
assert gpus["merge_on"] == "gpus" and host["merge_on"] == "host", (gpus.get("merge_on"), host.get("merge_on"))
PY
  done
done
# NCCL's all-reduce in place of the ring: the weighted merges.
for algo in adaptive sync; do
  for devices in cuda:0,cuda:1,cuda:2 cuda:0x2,cuda:1; do
    name=${algo}_nccl_${devices//[:,]/_}
    "$xmltrain" train "${half_epoch[@]}" --algo "$algo" --devices "$devices" --metrics "${name}_ring.jsonl" > /dev/null
    "$xmltrain" train "${half_epoch[@]}" --algo "$algo" --devices "$devices" --collective nccl \
      --metrics "${name}_nccl.jsonl" > /dev/null
    close_runs "${name}_ring.jsonl" "${name}_nccl.jsonl" "$algo on $devices, ring / nccl" 0.005 1e-4
  done
done

"$xmltrain" train "${half_epoch[@]}" --algo single --devices cuda:0 --merge-on host --metrics single_host.jsonl > /dev/null
"$xmltrain" train "${half_epoch[@]}" --algo single --devices cuda:0 --metrics single_gpus.jsonl > /dev/null
close_runs single_host.jsonl single_gpus.jsonl "single on cuda:0, host / GPU merge" 0.005 1e-4

# An elastic restart: 4 GPUs, checkpointed after every mega-batch, stopped after one epoch; then 3 to two.
# The CUDA step's settings, as in common (--hidden auto would make Bibtex's layer 1024 wide), and a
# constant rate: under cosine a run stopped at epoch 1 of 1 and extended to 2 is not the 2-epoch run.
run=(train --train "$data/train.txt" --test "$data/test.txt" --seed 1 --algo adaptive --mega-batch 8 --hidden 128
     --lr-schedule constant --ranker off)
"$xmltrain" "${run[@]}" --devices cuda:0,cuda:1,cuda:2,cuda:3 --epochs 1 --checkpoint-dir four --checkpoint-every 1 \
  --metrics four.jsonl > /dev/null
"$xmltrain" "${run[@]}" --devices cuda:0,cuda:1,cuda:2 --epochs 2 --resume four --metrics three.jsonl > three.out \
  2> three.err
grep -q "resumed from" three.err || { cat three.err; fail "the restart on 3 GPUs did not resume"; }
"$xmltrain" "${run[@]}" --devices cuda:0,cuda:1,cuda:2,cuda:3 --epochs 2 --metrics whole.jsonl > /dev/null
python3 - whole.jsonl three.jsonl <<'PY' || fail "the restart from 4 GPUs to 3 did not finish the run"
import json, sys
whole, three = ([json.loads(l) for l in open(f)][-1] for f in sys.argv[1:3])
assert three["train_samples"] == whole["train_samples"], (three["train_samples"], whole["train_samples"])
assert abs(three["p1"] - whole["p1"]) <= 0.05 and three["p1"] > 0.15, (three["p1"], whole["p1"])
print(f"4 GPUs, then 3: {three['train_samples']} rows trained, P@1 {three['p1']:.4f} (4 GPUs throughout: {whole['p1']:.4f})")
PY

# GPU 1 lost (an injected illegal address at its k-th launch) with the global model on the GPUs:
# - adaptive, in training: the host's copy of w and w_p, made after every mega-batch, is current,
#   so nothing is lost; the two others go on and learn;
# - sync, which merges every round: in a merge (k = 120, in the ring) and in training (k = 130),
#   the survivors go on from the host's copy, and the run says so.
XMLT_SIM_FAULT_LAUNCH=400@1 "$xmltrain" train "${common[@]}" --algo adaptive --devices cuda:0,cuda:1,cuda:2 \
  --metrics lost.jsonl > lost.out 2> lost.err || { cat lost.err; fail "the run with a lost GPU failed"; }
grep -q "device cuda:1 dropped" lost.err || { cat lost.err; fail "GPU 1 was not dropped"; }
python3 - lost.jsonl <<'PY' || fail "the run with a lost GPU did not learn"
import json, sys
last = [json.loads(l) for l in open(sys.argv[1])][-1]
assert last["p1"] > 0.15, last["p1"]
print(f"GPU 1 lost in training: the two others reached P@1 {last['p1']:.4f}")
PY
for k in 120 130; do
  XMLT_SIM_FAULT_LAUNCH=$k@1 "$xmltrain" train "${common[@]}" --algo sync --devices cuda:0,cuda:1,cuda:2 \
    --metrics "lost_sync_$k.jsonl" > /dev/null 2> "lost_sync_$k.err" ||
    { cat "lost_sync_$k.err"; fail "sync with GPU 1 lost at launch $k failed"; }
  grep -q "device cuda:1 dropped" "lost_sync_$k.err" || { cat "lost_sync_$k.err"; fail "GPU 1 was not dropped (k $k)"; }
  grep -q "the run goes on from the host's copy" "lost_sync_$k.err" ||
    { cat "lost_sync_$k.err"; fail "sync, GPU 1 lost at launch $k: the run does not say where the model came from"; }
  python3 - "lost_sync_$k.jsonl" "$k" <<'PY' || fail "sync with a lost GPU did not learn"
import json, sys
last = [json.loads(l) for l in open(sys.argv[1])][-1]
assert last["p1"] > 0.15, last["p1"]
print(f"sync, GPU 1 lost at launch {sys.argv[2]}: the two others reached P@1 {last['p1']:.4f}")
PY
done

# Two GPUs, GPU 1 lost: the lone survivor merges alone from then on, in training (adaptive,
# k = 400) and in a merge (sync, k = 130). Its first merge kernel once failed on the error the
# lost GPU's released buffers left behind, as if GPU 0's own context were lost.
for at in adaptive:400 sync:130; do
  algo=${at%%:*} k=${at#*:}
  XMLT_SIM_FAULT_LAUNCH=$k@1 "$xmltrain" train "${common[@]}" --algo "$algo" --devices cuda:0,cuda:1 \
    --metrics "lost_two_$algo.jsonl" > /dev/null 2> "lost_two_$algo.err" ||
    { cat "lost_two_$algo.err"; fail "$algo on two GPUs with GPU 1 lost at launch $k failed"; }
  grep -q "device cuda:1 dropped" "lost_two_$algo.err" || { cat "lost_two_$algo.err"; fail "$algo: GPU 1 was not dropped"; }
  python3 - "lost_two_$algo.jsonl" "$algo" "$k" <<'PY' || fail "$algo on two GPUs: the survivor did not finish the run"
import json, sys
last = [json.loads(l) for l in open(sys.argv[1])][-1]
devices = {d["id"]: d for d in last["devices"]}
assert devices["cuda:1"]["dropped"] and not devices["cuda:0"]["dropped"], devices
assert last["epoch"] == 2 and last["p1"] > 0.05, last
print(f"{sys.argv[2]} on two GPUs, GPU 1 lost at launch {sys.argv[3]}: cuda:0 finished the run alone, P@1 {last['p1']:.4f}")
PY
done
