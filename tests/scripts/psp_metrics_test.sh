#!/usr/bin/env bash
# eval --train's propensity-scored metrics against an independent computation (psp_reference.py)
# from predict's output, on generated data (power-law labels, so the propensities differ), with
# the default A,B and the Amazon ones. Also: train's metrics file and summary carry them.
# Usage: psp_metrics_test.sh XMLTRAIN SOURCE_DIR
set -euo pipefail
xmltrain=$1
source_dir=$2
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
fail() { echo "psp_metrics_test: $*" >&2; exit 1; }

"$xmltrain" gen --rows 3000 --test-rows 400 --features 500 --labels 200 --nnz 12 --labels-per-row 3 \
  --seed 4 --out "$work" >/dev/null
"$xmltrain" train --train "$work/train.txt" --test "$work/test.txt" --hidden 32 --epochs 3 \
  --metrics "$work/m.jsonl" --model "$work/m.xmlt" > "$work/train.out" 2>/dev/null
grep -q '"psp1"' "$work/m.jsonl" || fail "the metrics file has no psp1"
tail -1 "$work/train.out" | grep -q '"psndcg5"' || fail "the summary has no psndcg5"
"$xmltrain" predict --model "$work/m.xmlt" --input "$work/test.txt" --top-k 5 --output "$work/pred.txt"

for ab in 0.55,1.5 0.6,2.6; do
  "$xmltrain" eval --model "$work/m.xmlt" --test "$work/test.txt" --train "$work/train.txt" \
    --propensity "$ab" > "$work/eval.json"
  python3 "$source_dir/tests/scripts/psp_reference.py" "$work/train.txt" "$work/test.txt" "$work/pred.txt" \
    "${ab%,*}" "${ab#*,}" > "$work/reference.json"
  python3 - "$work/eval.json" "$work/reference.json" "$ab" <<'PY'
import json, sys
got, want = json.load(open(sys.argv[1])), json.load(open(sys.argv[2]))
for key, value in want.items():
    if abs(got[key] - value) > 1e-6 * max(1.0, abs(value)):
        sys.exit(f"psp_metrics_test: {key} with A,B={sys.argv[3]}: eval says {got[key]}, the reference {value}")
if not 0 < want["psp1"] < 1:
    sys.exit(f"psp_metrics_test: psp1 {want['psp1']} is not inside (0, 1): nothing is compared")
print(f"A,B={sys.argv[3]}: eval matches the reference: " + ", ".join(f"{k} {v:.4f}" for k, v in sorted(want.items())))
PY
done
# Without --train there is nothing to weigh by: no propensity-scored metrics.
"$xmltrain" eval --model "$work/m.xmlt" --test "$work/test.txt" | grep -vq psp1 || fail "psp1 without --train"
# A bad A,B is a usage error.
if "$xmltrain" eval --model "$work/m.xmlt" --test "$work/test.txt" --train "$work/train.txt" --propensity 0.5 \
    2> "$work/err.txt"; then fail "--propensity 0.5 accepted"; fi
grep -q -- "--propensity must be A,B" "$work/err.txt" || fail "no message for --propensity 0.5: $(cat "$work/err.txt")"
echo "psp_metrics_test: passed"
