#!/usr/bin/env bash
# Under mpirun every rank reads its own command line and its own copy of the data: ranks that
# disagree (a stale copy of a file, a flag given to one rank only) are refused before training,
# with exit 2 naming the flag or the file, instead of training silently on a mix or hanging until
# --rank-timeout. A usage error under mpirun is exit 2, as in one process. (Issue: reliability,
# third round, row 4.)
# Usage: mpi_ranks_agree_test.sh XMLTRAIN MPIEXEC
set -euo pipefail
xmltrain=$1
mpiexec=$2
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
cd "$work"
fail() { echo "FAIL: $*" >&2; exit 1; }

"$xmltrain" gen --rows 2000 --test-rows 200 --features 300 --labels 30 --out data > /dev/null
"$xmltrain" gen --rows 2000 --test-rows 200 --features 300 --labels 30 --seed 9 --out other > /dev/null
base=(train --test data/test.txt --algo adaptive --devices cpu:1 --hidden 8 --rank-timeout 30)

# Rank 0 and rank 1 with the base flags and their own: "$1" what, "$2" the expected exit code, "$3"
# a text the error must hold ("" for none), then rank 0's flags, "--", rank 1's flags.
two_ranks() {
  local what=$1 expected=$2 message=$3
  shift 3
  local first=() second=()
  while [[ $1 != -- ]]; do first+=("$1"); shift; done
  shift
  second=("$@")
  set +e
  timeout 120 "$mpiexec" -np 1 "$xmltrain" "${base[@]}" "${first[@]}" : -np 1 "$xmltrain" "${base[@]}" "${second[@]}" \
      > out.txt 2> err.txt
  local status=$?
  set -e
  [[ $status -eq $expected ]] || { cat err.txt >&2; fail "$what: exit $status, not $expected"; }
  [[ -z $message ]] || grep -qF -- "$message" err.txt || { cat err.txt >&2; fail "$what: the error does not say '$message'"; }
  echo "$what: exit $status"
}

two_ranks "the same flags and data" 0 "" --train data/train.txt --epochs 1 -- --train data/train.txt --epochs 1
two_ranks "another --seed on rank 1" 2 "--seed: rank 0 1, rank 1 2" \
    --train data/train.txt --epochs 1 -- --train data/train.txt --epochs 1 --seed 2
two_ranks "another training file of as many rows on rank 1" 2 "--train (checksum)" \
    --train data/train.txt --epochs 1 -- --train other/train.txt --epochs 1
head -n -1 data/train.txt > short.txt  # one row short (the header's count is then a warning)
# The rows each rank would train on: a tenth of each file is held out for the ranker.
two_ranks "a training file one row short on rank 1" 2 "--train (rows): rank 0 1800, rank 1 1799" \
    --train data/train.txt --epochs 1 -- --train short.txt --epochs 1
two_ranks "another --epochs on rank 1" 2 "--epochs: rank 0 1.0, rank 1 2.0" \
    --train data/train.txt --epochs 1 -- --train data/train.txt --epochs 2
two_ranks "another --lr on rank 1" 2 "--lr" --train data/train.txt --epochs 1 -- --train data/train.txt --epochs 1 --lr 0.5
two_ranks "a usage error on every rank" 2 "--batch" \
    --train data/train.txt --epochs 1 --batch 0 -- --train data/train.txt --epochs 1 --batch 0
