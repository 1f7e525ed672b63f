#!/usr/bin/env bash
# `xmltrain train` on simulated GPUs (the -DXMLT_CUDA=SIM build), end to end on Bibtex, against
# the same runs on CPU devices at the same seed: --algo single on cuda:0 against cpu:1 (per-epoch
# training loss within 1e-3 relative, P@1 within 0.01), --algo adaptive on cuda:0,cuda:1 against
# cpu:2 (P@1 within 0.02); a sticky error injected into GPU 0 (XMLT_SIM_FAULT_LAUNCH), in training
# and in an evaluation, drops cuda:0 while cpu:1 finishes the run; a card too small for the memory plan (XMLT_SIM_GPU_MEMORY=1M) is
# exit 2 with the numbers; an allocation failure while a GPU is set up (XMLT_SIM_FAULT_ALLOC) names the device (exit 1);
# a device error in --lr auto's search stops it naming the device (exit 1); with MPI, two ranks of one simulated GPU each (each process has its own)
# train as the one process on cuda:0,cuda:1 (P@1 within 0.005: the rank sums round in another
# order); a run opens a context on the GPUs it trains on and no other. Three epochs each: the simulator is slow. The other merges, logical and mixed devices and
# --math: gpu_sim_algos_test.sh; stop, resume and extension: gpu_sim_resume_test.sh.
# Usage: gpu_sim_train_test.sh XMLTRAIN BIBTEX_DIR [MPIEXEC]
set -euo pipefail
mpiexec=${3:-}
source "$(dirname "$0")/gpu_sim_common.sh" "$1" "$2" 3

# A run opens a context (which holds memory on a card) on the GPUs it trains on and no other.
XMLT_SIM_REPORT_CONTEXTS=1 "$xmltrain" train "${common[@]}" --algo single --devices cpu:1 --metrics single_cpu.jsonl \
  > /dev/null 2> single_cpu.err
XMLT_SIM_REPORT_CONTEXTS=1 "$xmltrain" train "${common[@]}" --algo single --devices cuda:0 --metrics single_cuda.jsonl \
  > /dev/null 2> single_cuda.err
close_runs single_cpu.jsonl single_cuda.jsonl "single cpu:1 / cuda:0" 0.01 1e-3
grep -q "gpusim: contexts opened: none" single_cpu.err || { cat single_cpu.err; fail "a run on cpu:1 opened a GPU context"; }
grep -q "gpusim: contexts opened: GPU 0$" single_cuda.err || { cat single_cuda.err; fail "a run on cuda:0 opened another GPU's context"; }
echo "contexts: none for cpu:1, GPU 0 alone for cuda:0"

"$xmltrain" train "${common[@]}" --algo adaptive --devices cpu:2 --metrics adaptive_cpu.jsonl > /dev/null
"$xmltrain" train "${common[@]}" --algo adaptive --devices cuda:0,cuda:1 --metrics adaptive_cuda.jsonl > /dev/null
close_runs adaptive_cpu.jsonl adaptive_cuda.jsonl "adaptive cpu:2 / cuda:0,cuda:1" 0.02 ""

if [[ -n $mpiexec ]]; then
  "$mpiexec" -np 2 "$xmltrain" train "${common[@]}" --algo adaptive --devices cuda:0 --metrics adaptive_mpi.jsonl \
    > /dev/null
  close_runs adaptive_cuda.jsonl adaptive_mpi.jsonl "adaptive cuda:0,cuda:1 / two ranks of cuda:0" 0.005 ""
fi

# A sticky error on GPU 0 at its 100th launch (training, mega-batch 1) and at its 289th (the
# evaluation after mega-batch 2, launches 282 to 295 with 500 test rows): cuda:0 is dropped,
# cpu:1 trains on and the run ends normally. The launch counts are those of whole mega-batches
# from the start: without the mega-batch warm-up's shorter first ones.
for at in "100:dropped in mega-batch 1 " "289:dropped in the evaluation after mega-batch 2 "; do
  launch=${at%%:*} event=${at#*:}
  set +e
  XMLT_SIM_FAULT_LAUNCH=$launch@0 "$xmltrain" train "${common[@]}" --algo adaptive --devices cuda:0,cpu:1 \
    --mega-batch-warmup off --metrics lost.jsonl > lost.out 2> lost.err
  status=$?
  set -e
  [[ $status -eq 0 ]] || { cat lost.err; fail "the run losing GPU 0 at launch $launch ended with $status"; }
  grep -q "gpusim: GPU 0: injected fault" lost.err || fail "no fault was injected at launch $launch"
  grep -q "device cuda:0 $event" lost.err || { cat lost.err; fail "launch $launch: no event 'device cuda:0 $event'"; }
  python3 - lost.jsonl "$launch" <<'PY' || fail "launch $launch: cuda:0 was not dropped, or cpu:1 did not finish the run"
import json, sys
last = [json.loads(l) for l in open(sys.argv[1])][-1]
devices = {d["id"]: d for d in last["devices"]}
assert devices["cuda:0"]["dropped"] and "context of GPU 0 is lost" in devices["cuda:0"]["fault"], devices["cuda:0"]
assert not devices["cpu:0"]["dropped"], devices
assert last["epoch"] == 3 and last["p1"] > 0.1, last
print(f"GPU 0 lost at launch {sys.argv[2]}: cuda:0 dropped, cpu:1 finished the run, P@1 {last['p1']:.4f}")
PY
done

set +e
XMLT_SIM_GPU_MEMORY=1M "$xmltrain" train "${common[@]}" --algo single --devices cuda:0 > small.out 2> small.err
status=$?
set -e
[[ $status -eq 2 ]] || fail "a card too small for the plan gave exit $status, not 2"
grep -q "not enough memory: the replicas on cuda:0 need .* MiB; 1 MiB are free" small.err ||
  { cat small.err; fail "the refusal does not give the numbers"; }
echo "a 1 MiB card: exit 2, $(head -1 small.err)"

# GPU 1's first allocation fails, while its replica's buffers are made: the error names the device.
set +e
XMLT_SIM_FAULT_ALLOC=1@1 "$xmltrain" train "${common[@]}" --algo adaptive --devices cuda:0,cuda:1 > setup.out 2> setup.err
status=$?
set -e
[[ $status -eq 1 ]] || { cat setup.err; fail "an allocation failure in cuda:1's set-up gave exit $status, not 1"; }
grep -q "^error: device cuda:1: cannot set up: .*out of memory" setup.err ||
  { cat setup.err; fail "an allocation failure in a GPU's set-up does not name the device"; }
echo "GPU 1 out of memory at set-up: exit 1, $(grep '^error:' setup.err | cut -c1-60)..."

# --lr auto on cuda:0 with a device error in its search, out of memory (GPU 0's 30th allocation,
# in the second candidate's run) or a lost context (its 300th launch, in the first's): the search
# stops with exit 1, naming the device and the error. It once took the failed candidates for
# diverged ones (and the next, failing on the error left behind) and went on to pick a rate, or
# called a lost GPU "every candidate learning rate diverged".
for fault in XMLT_SIM_FAULT_ALLOC=30@0 XMLT_SIM_FAULT_LAUNCH=300@0; do
  set +e
  env "$fault" "$xmltrain" train "${common[@]}" --algo single --devices cuda:0 --lr auto > search.out 2> search.err
  status=$?
  set -e
  [[ $status -eq 1 ]] || { cat search.err; fail "$fault in the learning-rate search gave exit $status, not 1"; }
  grep -q "error: the learning-rate search failed on cuda:0 at learning rate .*\(out of memory\|context of GPU 0 is lost\)" \
    search.err || { cat search.err; fail "$fault: the search's stop does not name the device and the error"; }
  if grep -q "diverged" search.err; then cat search.err; fail "$fault: a device error was taken for a divergence"; fi
  echo "$fault in the learning-rate search: exit 1, $(grep '^error:' search.err | cut -c1-100)..."
done
