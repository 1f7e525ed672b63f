#!/usr/bin/env bash
# `mpirun -np R xmltrain train ...` end to end on loopback: R ranks of k devices train the same
# model as one process with R*k devices (the same batch sizes and virtual times, P@1 within 0.005,
# and byte for byte where the merge is not hierarchical), for every --algo; a run extended under
# mpirun from its end checkpoint equals the longer run; and a rank that dies mid-run
# (--inject-fault kind=exit) stops the run, whose last periodic
# checkpoint then resumes under mpirun to the model of a run that never stopped (byte for byte).
# Data warnings are printed by rank 0 alone. On the wall clock the ranks share each mega-batch out
# by their measured speeds. That checkpoint also resumes on fewer and on more
# ranks (an elastic restart).
# Usage: mpi_train_test.sh XMLTRAIN MPIEXEC
set -euo pipefail
xmltrain=$1
mpiexec=$2
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
cd "$work"
fail() { echo "FAIL: $*" >&2; exit 1; }
mpi() { local np=$1; shift; "$mpiexec" -np "$np" "$@"; }

"$xmltrain" gen --preset amazon670k --scale 0.002 --rows 3000 --test-rows 500 --out data > /dev/null
# A constant rate: extending a finished run under the default cosine schedule stretches it, so
# only a constant rate makes the extended run the longer run, which the last check compares.
# fp32 products: the hierarchical merges' sums round in another order, and bf16's coarser copy of
# the weights (--math auto on a CPU that has it) carries that difference past the P@1 tolerance.
common=(--train data/train.txt --test data/test.txt --eval-every 2 --row-cost 1e-4 --merge-cost 1e-9
        --lr-schedule constant --math fp32)

# $1 $2: two runs' metrics; $3: what. The same evaluations at the same virtual times, every
# device's batch, rows and updates the same, and P@1 within $4.
same_evaluations() {
  python3 - "$1" "$2" "$4" <<'PY' || fail "$3: the metrics differ"
import json, sys
def evaluations(path):
    return [r for r in map(json.loads, open(path)) if "devices" in r]
a, b, tolerance = evaluations(sys.argv[1]), evaluations(sys.argv[2]), float(sys.argv[3])
assert len(a) >= 2 and len(a) == len(b), (len(a), len(b))
for x, y in zip(a, b):
    assert x["train_time_s"] == y["train_time_s"], (x["train_time_s"], y["train_time_s"])
    assert [(d["batch"], d["rows"], d["updates"]) for d in x["devices"]] == \
           [(d["batch"], d["rows"], d["updates"]) for d in y["devices"]], (x["devices"], y["devices"])
    assert abs(x["p1"] - y["p1"]) <= tolerance, (x["p1"], y["p1"])
PY
}

# Adaptive, elastic and sync merge hierarchically across ranks (each rank's devices, then the
# ranks' partial sums): the same sums rounded in another order, so P@1 within 0.005. Adasum and
# crossbow merge every replica on every rank in the one-process order: the model byte for byte.
same_run() {  # $1 $2: two runs' files prefixes; $3: what; $4: exact or close
  if [[ $4 == exact ]]; then
    cmp -s "$1.bin" "$2.bin" || fail "$3: the models differ"
    same_evaluations "$1.jsonl" "$2.jsonl" "$3" 0
  else
    same_evaluations "$1.jsonl" "$2.jsonl" "$3" 0.005
  fi
}

for algo in adaptive elastic adasum sync crossbow; do
  "$xmltrain" train "${common[@]}" --epochs 2 --algo $algo --devices cpu:4 --speed 1,1.1,1.2,1.32 \
      --model one-$algo.bin --metrics one-$algo.jsonl > /dev/null 2>&1
  mpi 2 "$xmltrain" train "${common[@]}" --epochs 2 --algo $algo --devices cpu:2 --speed 1,1.1,1.2,1.32 \
      --model two-$algo.bin --metrics two-$algo.jsonl > two-$algo.out 2> two-$algo.err
  match=close
  [[ $algo == adasum || $algo == crossbow ]] && match=exact
  same_run one-$algo two-$algo "$algo, 2 ranks x cpu:2 against cpu:4" $match
  [[ $(grep -c summary two-$algo.out) == 1 ]] || fail "$algo: not exactly one summary (rank 0's)"
done
echo "every algo: 2 ranks x 2 devices = 1 process x 4 devices"

"$xmltrain" train "${common[@]}" --epochs 2 --algo adaptive --devices cpu:3 --speed 1,1.2,1.5 --model one3.bin \
    --metrics one3.jsonl > /dev/null 2>&1
mpi 3 "$xmltrain" train "${common[@]}" --epochs 2 --algo adaptive --devices cpu:1 --speed 1,1.2,1.5 --model three.bin \
    --metrics three.jsonl > /dev/null 2>&1
same_run one3 three "3 ranks x cpu:1 against cpu:3" close
echo "3 ranks x 1 device = 1 process x 3 devices"

# The wall clock under mpirun: each rank deals its share of a mega-batch to its own devices as they
# report back, the shares following the ranks' measured speeds (rank 1's devices 3x slower here).
# Every row of the 2 epochs is trained once, rank 0 writes the one summary (and fits the ranker),
# and the fast rank's devices train most rows.
mpi 2 "$xmltrain" train --train data/train.txt --test data/test.txt --eval-every 2 --epochs 2 --algo adaptive \
    --devices cpu:2 --speed 1,1,3,3 --clock wall --metrics wall.jsonl > wall.out 2> wall.err \
    || { cat wall.err >&2; fail "the wall clock under mpirun"; }
[[ $(grep -c summary wall.out) == 1 ]] || fail "wall clock: not exactly one summary (rank 0's)"
python3 - wall.jsonl wall.out <<'PY' || fail "wall clock under mpirun: rows or shares wrong"
import json, sys
records = [r for r in map(json.loads, open(sys.argv[1])) if "devices" in r]
summary = [json.loads(l) for l in open(sys.argv[2]) if '"summary"' in l][-1]
rows = [sum(r["devices"][d]["rows"] for r in records) for d in range(4)]
# 2 epochs of the 2,700 rows left once the ranker holds out a tenth of the 3,000.
assert sum(rows) == summary["train_samples"] == 5400, (rows, summary["train_samples"])
assert rows[0] + rows[1] > 1.5 * (rows[2] + rows[3]), rows
PY
echo "wall clock: each rank deals its own share, every row trained once"

# The default --algo (single) is one device in one process: refused under mpirun, naming --algo.
if mpi 2 "$xmltrain" train --train data/train.txt --epochs 1 > single.out 2> single.err; then
  fail "--algo single ran over 2 ranks"
fi
grep -q -- "--algo single trains one device in one process" single.err || { cat single.err >&2; fail "single over ranks: unclear error"; }
echo "the default --algo single is refused under mpirun with a message naming --algo"

# The ranks read the same files: a file's warning is printed once (by rank 0), not once a rank.
sed '1s/^3000 /3001 /' data/train.txt > short.txt
mpi 2 "$xmltrain" train --train short.txt --test data/test.txt --epochs 1 --algo adaptive --devices cpu:1 > /dev/null 2> short.err
[[ $(grep -c "^warning: .*3001" short.err) == 1 ]] || { cat short.err >&2; fail "a data warning not printed exactly once"; }
echo "a data warning is printed once"

# Extended under mpirun from the end checkpoint of a 1-epoch run: the 2-epoch run.
mpi 2 "$xmltrain" train "${common[@]}" --epochs 1 --algo adaptive --devices cpu:2 --speed 1,1.1,1.2,1.32 \
    --checkpoint-dir ck > /dev/null 2>&1
[[ -s ck/checkpoint.xmlc ]] || fail "no checkpoint written under mpirun"
mpi 2 "$xmltrain" train "${common[@]}" --epochs 2 --algo adaptive --devices cpu:2 --speed 1,1.1,1.2,1.32 --resume ck \
    --model resumed.bin --metrics resumed.jsonl > /dev/null 2>&1
cmp -s resumed.bin two-adaptive.bin || fail "extended under mpirun: not the model of the longer run"
echo "extended under mpirun = the longer run"

# Rank 1's device cpu:0@r1 (device 2) ends its process in mega-batch 3: the run stops, with the
# periodic checkpoint of mega-batch 2; resumed under mpirun, it trains the run that never stopped.
set +e
mpi 2 "$xmltrain" train "${common[@]}" --epochs 2 --algo adaptive --devices cpu:2 --speed 1,1.1,1.2,1.32 \
    --checkpoint-dir dead --checkpoint-every 1 --inject-fault device=2,megabatch=3,kind=exit \
    --model dead.bin > dead.out 2> dead.err
status=$?
set -e
[[ $status -ne 0 ]] || fail "a dead rank did not stop the run"
[[ ! -e dead.bin ]] || fail "a run with a dead rank wrote a model"
[[ -s dead/checkpoint.xmlc ]] || fail "no checkpoint before the rank died"
cp -r dead dead-fewer
cp -r dead dead-more
mpi 2 "$xmltrain" train "${common[@]}" --epochs 2 --algo adaptive --devices cpu:2 --speed 1,1.1,1.2,1.32 --resume dead \
    --model revived.bin > /dev/null 2> revived.err || { cat revived.err >&2; fail "resume after a dead rank"; }
cmp -s revived.bin two-adaptive.bin || fail "resumed after a dead rank: not the model of the run that never stopped"
echo "a dead rank stops the run; its checkpoint resumes under mpirun to the same model"

# An elastic restart from the same checkpoint: with fewer ranks (one process, 3 devices) and with
# more (3 ranks x 2 devices), the run is re-planned over the devices it has and trains to its end,
# every row of the 2 epochs once.
replanned() {  # $1: the run's stdout, $2: its stderr, $3: what
  grep -q "on other devices" "$2" || { cat "$2" >&2; fail "$3: not re-planned"; }
  python3 - "$1" two-adaptive.out <<'PY' || fail "$3: not the whole run"
import json, sys
def summary(path):
    return [json.loads(l) for l in open(path) if '"summary"' in l][-1]
got, want = summary(sys.argv[1]), summary(sys.argv[2])
assert got["epochs"] == want["epochs"] and got["train_samples"] == want["train_samples"], (got, want)
PY
}
"$xmltrain" train "${common[@]}" --epochs 2 --algo adaptive --devices cpu:3 --speed 1,1.1,1.2 --resume dead-fewer \
    > fewer.out 2> fewer.err || { cat fewer.err >&2; fail "resume on fewer ranks"; }
replanned fewer.out fewer.err "2 ranks resumed in one process"
mpi 3 "$xmltrain" train "${common[@]}" --epochs 2 --algo adaptive --devices cpu:2 --speed 1,1.1,1.2,1.32,1.1,1 \
    --resume dead-more > more.out 2> more.err || { cat more.err >&2; fail "resume on more ranks"; }
replanned more.out more.err "2 ranks resumed on 3"
echo "elastic restart: the checkpoint of 2 ranks goes on in 1 process and on 3 ranks"

# Weights in bf16 across ranks (--math bf16, where --weights auto keeps them in bf16). Adasum reads
# every replica on every rank, the other ranks' from bf16 mirrors: 2 ranks train the one-process
# model byte for byte. Adaptive sums fp32 partial sums of its bf16 replicas across ranks; its end
# checkpoint gathers the bf16 replicas to rank 0, and extended from it under mpirun the run is the
# longer run, byte for byte. A CPU without native bf16 refuses --math bf16: nothing to test there.
bf16=(--train data/train.txt --test data/test.txt --eval-every 2 --row-cost 1e-4 --merge-cost 1e-9
      --lr-schedule constant --math bf16 --speed 1,1.1,1.2,1.32)
if "$xmltrain" train "${bf16[@]}" --epochs 2 --algo adasum --devices cpu:4 --model one-bf16.bin \
    > /dev/null 2> one-bf16.err; then
  grep -q "weights in bf16" one-bf16.err || { cat one-bf16.err >&2; fail "bf16: --weights auto left them in fp32"; }
  mpi 2 "$xmltrain" train "${bf16[@]}" --epochs 2 --algo adasum --devices cpu:2 --model two-bf16.bin \
      > /dev/null 2> two-bf16.err || { cat two-bf16.err >&2; fail "bf16 weights under mpirun"; }
  grep -q "weights in bf16" two-bf16.err || { cat two-bf16.err >&2; fail "bf16 under mpirun: weights in fp32"; }
  cmp -s one-bf16.bin two-bf16.bin || fail "bf16 weights, adasum: 2 ranks x cpu:2 differ from cpu:4"
  mpi 2 "$xmltrain" train "${bf16[@]}" --epochs 2 --algo adaptive --devices cpu:2 --model long-bf16.bin > /dev/null 2>&1
  mpi 2 "$xmltrain" train "${bf16[@]}" --epochs 1 --algo adaptive --devices cpu:2 --checkpoint-dir ck-bf16 \
      > /dev/null 2>&1
  mpi 2 "$xmltrain" train "${bf16[@]}" --epochs 2 --algo adaptive --devices cpu:2 --resume ck-bf16 \
      --model extended-bf16.bin > /dev/null 2> extended-bf16.err || { cat extended-bf16.err >&2; fail "bf16 resume"; }
  cmp -s long-bf16.bin extended-bf16.bin || fail "bf16 weights, extended under mpirun: not the longer run"
  echo "bf16 weights across ranks: adasum = 1 process byte for byte; extended from a checkpoint = the longer run"
else
  grep -q "bf16" one-bf16.err || { cat one-bf16.err >&2; fail "the bf16 run failed for another reason"; }
  echo "no native bf16 on this CPU: the bf16 weights across ranks are not run here"
fi
echo "mpi_train_test: all passed"
