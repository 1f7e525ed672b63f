#!/usr/bin/env bash
# Stopping a run under mpirun (issue 61, point 3). Open MPI's mpirun kills the ranks a second
# after it forwards SIGINT or SIGTERM (odls_base_sigkill_timeout), which left no model and no
# checkpoint from a stop in the ranker stage; SIGUSR1 it forwards to every rank as it is, and
# xmltrain takes it as a stop:
# - in training, every rank stops at the same safe point, the checkpoint is written, mpirun exits
#   138, and a resume under mpirun ends with the model of a run never stopped, byte for byte;
# - in the ranker stage, after training, rank 0 ends the stage at once and --model holds the
#   trained MLP (a model file without a ranker), the metrics file finished.
# Usage: mpi_stop_test.sh XMLTRAIN MPIEXEC
set -euo pipefail
xmltrain=$1
mpiexec=$2
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
cd "$work"
fail() { echo "FAIL: $*" >&2; for f in *.err; do echo "--- $f" >&2; cat "$f" >&2; done; exit 1; }

"$xmltrain" gen --preset amazon670k --scale 0.002 --rows 6000 --test-rows 300 --out data > /dev/null
common=(--train data/train.txt --test data/test.txt --algo adaptive --devices cpu:2 --hidden 16)

# Starts `mpirun -np 2 xmltrain train ARGS` in the background, waits until FILE holds a line, then
# sends mpirun SIGUSR1; sets `status` to mpirun's exit code.
stop_when() {
  local file=$1 name=$2; shift 2
  "$mpiexec" -np 2 "$xmltrain" train "${common[@]}" "$@" > "$name.out" 2> "$name.err" &
  local pid=$!
  for _ in $(seq 1 1200); do
    [[ -s $file ]] && break
    kill -0 "$pid" 2> /dev/null || break
    sleep 0.05
  done
  kill -USR1 "$pid" 2> /dev/null || true
  status=0
  wait "$pid" || status=$?
}

# In training: the first evaluation's line, then the signal.
training=(--epochs 8 --eval-every 1 --ranker off --checkpoint-dir ck --model stopped.bin --metrics m.jsonl)
stop_when m.jsonl.partial training "${training[@]}"
[[ $status -eq 138 ]] || fail "a SIGUSR1 in training: mpirun exited $status, not 138"
[[ -s ck/checkpoint.xmlc ]] || fail "a SIGUSR1 in training left no checkpoint"
[[ ! -e stopped.bin ]] || fail "a run stopped in training wrote a model"
grep -q "stopped by signal 10 at a safe point; resume with --resume ck" training.err || fail "no stop message"
"$mpiexec" -np 2 "$xmltrain" train "${common[@]}" "${training[@]}" --resume ck > resumed.out 2> resumed.err ||
  fail "the resume under mpirun failed"
"$mpiexec" -np 2 "$xmltrain" train "${common[@]}" --epochs 8 --eval-every 1 --ranker off --model whole.bin \
  > whole.out 2> whole.err || fail "the run never stopped failed"
cmp -s stopped.bin whole.bin || fail "the resumed run's model differs from the run never stopped"

# In the ranker stage: training's only evaluation (--eval-every end) is printed before the stage,
# whose 20 s of solving a 1,000-label shortlist the signal interrupts.
stop_when stage.out stage --epochs 0.2 --eval-every end --ranker-shortlist 1000 --ranker-passes 1000 \
  --model mlp.bin --metrics stage.jsonl
[[ $status -eq 138 ]] || fail "a SIGUSR1 in the ranker stage: mpirun exited $status, not 138"
grep -q "stopped by signal 10 in the ranker stage, after training; mlp.bin holds the trained MLP" stage.err ||
  fail "no stop message from the stage"
# The other rank, its part ended, waits for rank 0 and leaves the stop to it: killed by the signal,
# it made mpirun end rank 0 before the MLP was written.
! grep -q "exited on signal" stage.err || fail "a rank died of the signal forwarded in the ranker stage"
[[ -s mlp.bin && -s stage.jsonl ]] || fail "the stage's stop lost the trained MLP or the metrics"
"$xmltrain" eval --model mlp.bin --test data/test.txt > /dev/null || fail "the MLP kept by the stop does not load"
echo "mpi stop: OK"
