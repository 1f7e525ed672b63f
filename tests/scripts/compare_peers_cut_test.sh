#!/usr/bin/env bash
# scripts/peers/compare_peers.py --train-rows: every system trains on the same random cut of the
# training rows (here xmltrain alone, the peers' libraries being outside CI), the figures go to
# SET-Nrows-seedS.json and peers.md says the cut; a cut of more rows than the set has is refused.
# Usage: compare_peers_cut_test.sh XMLTRAIN SOURCE_DIR
set -euo pipefail
xmltrain=$1
source_dir=$2
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
fail() { echo "FAIL: $*" >&2; exit 1; }
cd "$work"
"$xmltrain" gen --preset amazon670k --scale 0.002 --rows 600 --test-rows 100 --out data > /dev/null
compare() {
  python3 "$source_dir/scripts/peers/compare_peers.py" tiny data/train.txt data/test.txt "$xmltrain" out/peers \
    --systems xmltrain --threads 1 "$@"
}
compare --train-rows 200 --cut-seed 3 > cut.out 2> cut.err || fail "the cut run failed: $(cat cut.err)"
python3 - <<'PY' || fail "the cut's figures: $(cat out/peers/tiny-200rows-seed3.json 2>&1 | head -c 400)"
import json
r = json.load(open("out/peers/tiny-200rows-seed3.json"))
assert r["train_rows"] == 200 and r["cut_seed"] == 3, r
assert [row["system"] for row in r["rows"]] == ["xmltrain"], r["rows"]
assert 0 < r["rows"][0]["figures"]["p1"] <= 1, r["rows"][0]["figures"]
PY
grep -q "^## tiny, cut to 200 training rows (seed 3) (100 test rows" out/peers.md || fail "peers.md does not say the cut"
if compare --train-rows 600 > big.out 2> big.err; then fail "a cut of every row was accepted"; fi
grep -q "train-rows must be between 1 and 599" big.err || fail "the refusal does not say the limit: $(cat big.err)"
echo "compare-peers cut: OK"
