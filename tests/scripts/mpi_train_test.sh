#!/usr/bin/env bash
# `mpirun -np R xmltrain train ...` end to end on loopback: R ranks of k devices train the same
# model as one process with R*k devices (the model files byte for byte, the metrics' P@1 and batch
# sizes), for every --algo; a run extended under mpirun from its end checkpoint equals the longer
# run; and a rank that dies mid-run (--inject-fault kind=exit) stops the run, whose last periodic
# checkpoint then resumes under mpirun to the model of a run that never stopped.
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
common=(--train data/train.txt --test data/test.txt --eval-every 2 --row-cost 1e-4 --merge-cost 1e-9)

evaluations() {  # one line per evaluation: P@1, the virtual clock, every device's batch and rows
  python3 -c '
import json, sys
for line in open(sys.argv[1]):
    r = json.loads(line)
    if "devices" in r:
        print(r["p1"], r["train_time_s"], [(d["batch"], d["rows"], d["updates"]) for d in r["devices"]])
' "$1" > "$1.evals"
}

same_run() {  # $1 $2: two runs' files prefixes
  cmp -s "$1.bin" "$2.bin" || fail "$3: the models differ"
  evaluations "$1.jsonl"
  evaluations "$2.jsonl"
  [[ $(wc -l < "$1.jsonl.evals") -ge 2 ]] || fail "$3: too few evaluations"
  diff "$1.jsonl.evals" "$2.jsonl.evals" || fail "$3: the metrics differ"
}

for algo in adaptive elastic adasum sync crossbow; do
  "$xmltrain" train "${common[@]}" --epochs 2 --algo $algo --devices cpu:4 --speed 1,1.1,1.2,1.32 \
      --model one-$algo.bin --metrics one-$algo.jsonl > /dev/null 2>&1
  mpi 2 "$xmltrain" train "${common[@]}" --epochs 2 --algo $algo --devices cpu:2 --speed 1,1.1,1.2,1.32 \
      --model two-$algo.bin --metrics two-$algo.jsonl > two-$algo.out 2> two-$algo.err
  same_run one-$algo two-$algo "$algo, 2 ranks x cpu:2 against cpu:4"
  [[ $(grep -c summary two-$algo.out) == 1 ]] || fail "$algo: not exactly one summary (rank 0's)"
done
echo "every algo: 2 ranks x 2 devices = 1 process x 4 devices"

"$xmltrain" train "${common[@]}" --epochs 2 --algo adaptive --devices cpu:3 --speed 1,1.2,1.5 --model one3.bin \
    --metrics one3.jsonl > /dev/null 2>&1
mpi 3 "$xmltrain" train "${common[@]}" --epochs 2 --algo adaptive --devices cpu:1 --speed 1,1.2,1.5 --model three.bin \
    --metrics three.jsonl > /dev/null 2>&1
same_run one3 three "3 ranks x cpu:1 against cpu:3"
echo "3 ranks x 1 device = 1 process x 3 devices"

# Extended under mpirun from the end checkpoint of a 1-epoch run: the 2-epoch run.
mpi 2 "$xmltrain" train "${common[@]}" --epochs 1 --algo adaptive --devices cpu:2 --speed 1,1.1,1.2,1.32 \
    --checkpoint-dir ck > /dev/null 2>&1
[[ -s ck/checkpoint.xmlc ]] || fail "no checkpoint written under mpirun"
mpi 2 "$xmltrain" train "${common[@]}" --epochs 2 --algo adaptive --devices cpu:2 --speed 1,1.1,1.2,1.32 --resume ck \
    --model resumed.bin --metrics resumed.jsonl > /dev/null 2>&1
cmp -s resumed.bin one-adaptive.bin || fail "extended under mpirun: not the model of the longer run"
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
mpi 2 "$xmltrain" train "${common[@]}" --epochs 2 --algo adaptive --devices cpu:2 --speed 1,1.1,1.2,1.32 --resume dead \
    --model revived.bin > /dev/null 2> revived.err || { cat revived.err >&2; fail "resume after a dead rank"; }
cmp -s revived.bin one-adaptive.bin || fail "resumed after a dead rank: not the model of the run that never stopped"
echo "a dead rank stops the run; its checkpoint resumes under mpirun to the same model"
echo "mpi_train_test: all passed"
