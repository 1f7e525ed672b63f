# What the end-to-end tests on simulated GPUs share (sourced): the Bibtex check, a scratch folder,
# and comparisons of two runs' metrics. Sets: xmltrain, data, work, common (train flags).
# Usage, from a test script: source gpu_sim_common.sh XMLTRAIN BIBTEX_DIR EPOCHS
xmltrain=$1
data=$2
if [[ ! -f $data/train.txt ]]; then
  echo "bibtex not found at $data: nothing to train on"
  exit 77  # ctest SKIP_RETURN_CODE: a missing resource
fi
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
cd "$work"
fail() { echo "FAIL: $*" >&2; exit 1; }
# The plain step (no dropout, heavy ball on the first layer, a constant rate): the runs compare
# merges, devices and resumes, not the defaults' regularization, which the CUDA tests compare with
# the CPU's step. --hidden auto would make Bibtex's layer 1024 wide, eight times the simulator's
# work, and 500 of the 2,515 test rows are enough to compare two runs (the same rows in both).
# fp32 products last (gpu_sim_algos_test.sh drops them to try the others): --math auto would take
# bf16 on a CPU run where the CPU has it, and fp32 on the GPU run it is compared with. No ranker:
# it is fitted on the host after training, whatever the devices (tests/apps/cli_ranker_test.cc).
common=(--train "$data/train.txt" --test "$data/test.txt" --epochs "$3" --seed 1 --hidden 128 --dropout 0
        --input-optimizer sgd --lr-schedule constant --eval-rows 500 --ranker off --math fp32)

# $1 $2: two runs' metrics; $3: what; $4: P@1 tolerance; $5: relative training-loss tolerance
# (empty: not compared).
close_runs() {
  python3 - "$@" <<'PY' || fail "$3: the runs differ"
import json, sys
a, b, what, p1_tol, loss_tol = sys.argv[1], sys.argv[2], sys.argv[3], float(sys.argv[4]), sys.argv[5]
ra = [json.loads(l) for l in open(a)]
rb = [json.loads(l) for l in open(b)]
assert len(ra) == len(rb) and ra, f"{len(ra)} and {len(rb)} evaluations"
for x, y in zip(ra, rb):
    print(f"{what}: epoch {x['epoch']}: train loss {x['train_loss']:.5f} / {y['train_loss']:.5f}, P@1 {x['p1']:.4f} / {y['p1']:.4f}")
    assert abs(x["p1"] - y["p1"]) <= p1_tol, "P@1"
    if loss_tol:
        assert abs(x["train_loss"] - y["train_loss"]) <= float(loss_tol) * abs(x["train_loss"]), "training loss"
PY
}

# $1 $2: two runs' metrics that must be the same run, record for record, wall times aside; $3: what.
same_runs() {
  python3 - "$@" <<'PY' || fail "$3: the runs are not the same"
import json, sys
a, b, what = sys.argv[1:4]
ra = [json.loads(l) for l in open(a)]
rb = [json.loads(l) for l in open(b)]
assert len(ra) == len(rb) and ra, f"{len(ra)} and {len(rb)} evaluations"
def training(record):  # everything but the times measured on the wall clock (the virtual clock's are kept)
    return {k: v for k, v in record.items() if k not in ("wall_time_s", "eval_time_s")}
for x, y in zip(ra, rb):
    tx, ty = training(x), training(y)
    differing = sorted(k for k in set(tx) | set(ty) if tx.get(k) != ty.get(k))
    assert not differing, f"mega-batch {x.get('megabatch')}: {differing}: {[(tx.get(k), ty.get(k)) for k in differing]}"
print(f"{what}: the same {len(ra)} evaluations; last P@1 {ra[-1]['p1']:.4f}, train loss {ra[-1]['train_loss']:.6f}")
PY
}
