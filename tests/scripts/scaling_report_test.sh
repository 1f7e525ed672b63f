#!/usr/bin/env bash
# Test of scripts/scaling_report.py (the scaling figure's table) on a hand-made sweep folder: two
# seeds of one and two devices, one seed of four that never reaches the target, and a failed run
# that is left out. Each seed's target is 95% of its one-device best less one standard error:
# 0.95 x 0.50 - sqrt(0.25 / 100) = 0.425. Builds nothing.
# Usage: tests/scripts/scaling_report_test.sh [SOURCE_DIR]
set -euo pipefail
fail() { echo "scaling_report_test: FAIL: $*" >&2; exit 1; }
source_dir=${1:-$(cd "$(dirname "$0")/../.." && pwd)}
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
mkdir -p "$work/sweep/runs"
rec() { echo "{\"epoch\": $1, \"p1\": $2, \"train_time_s\": $3, \"test_rows\": 100}"; }
# Seed 1: one device reaches 0.425 at 20 s (epoch 2), two devices at 6 s (epoch 1): 3.33x.
# Seed 2: one device at 20 s, two devices at 12 s (epoch 2): 1.67x. Geometric mean 2.36x.
{ rec 1 0.40 10; rec 2 0.50 20; rec 3 0.50 30; } > "$work/sweep/runs/a1.jsonl"
{ rec 1 0.45 6; rec 2 0.50 12; rec 3 0.52 15; } > "$work/sweep/runs/b1.jsonl"
{ rec 1 0.40 10; rec 2 0.50 20; rec 3 0.48 30; } > "$work/sweep/runs/a2.jsonl"
{ rec 1 0.30 6; rec 2 0.44 12; rec 3 0.50 15; } > "$work/sweep/runs/b2.jsonl"
{ rec 1 0.20 3; rec 2 0.30 6; } > "$work/sweep/runs/c1.jsonl"
cat > "$work/sweep/index.jsonl" <<'JSON'
{"id": "a1", "status": "ok", "flags": {"devices": "cpu:1", "seed": "1"}}
{"id": "b1", "status": "ok", "flags": {"devices": "cpu:2", "speed": "1,1.32", "seed": "1"}}
{"id": "a2", "status": "ok", "flags": {"devices": "cpu:1", "seed": "2"}}
{"id": "b2", "status": "ok", "flags": {"devices": "cpu:2", "speed": "1,1.32", "seed": "2"}}
{"id": "c1", "status": "ok", "flags": {"devices": "cpu:4", "seed": "1"}}
{"id": "zz", "status": "failed", "flags": {"devices": "cpu:8", "seed": "1"}}
JSON
out=$(python3 "$source_dir/scripts/scaling_report.py" "$work/sweep" --out "$work/report.md") || fail "exit $?"
expect_row() { grep -qxF -- "$1" <<<"$out" || { echo "$out" >&2; fail "no row '$1'"; }; }
grep -qF "on the **virtual** clock" <<<"$out" || fail "the clock is not named"
grep -qF "(0.4250, 0.4250 for seeds 1, 2)" <<<"$out" || { echo "$out" >&2; fail "wrong targets"; }
expect_row "| 1 | 2 | 20.000 (20.000-20.000) | 1x | 2.00 (2.00-2.00) | 1x | 0.4900 (0.3629-0.6171) |"
expect_row "| 2 | 2 | 9.000 (-29.118-47.118) | no difference (2.36x, 0.03-192.67, 2 seeds) | 1.50 (-4.85-7.85) | 2.00x (2.00-2.00, 2 seeds) | 0.5100 (0.3829-0.6371) |"
expect_row "| 4 | 1, 1 never reached it | - | - | - | 5.00x (one seed) | 0.3000 (one seed) |"
grep -q "| 8 |" <<<"$out" && fail "the failed run was counted"
cmp -s <(echo "$out") "$work/report.md" || fail "--out differs from stdout"
# A sweep without a one-device run has nothing to hold the others to.
sed -i '/"cpu:1"/d' "$work/sweep/index.jsonl"
if python3 "$source_dir/scripts/scaling_report.py" "$work/sweep" 2> "$work/err"; then fail "no one-device run accepted"; fi
grep -q "no finished one-device run" "$work/err" || fail "unclear error: $(cat "$work/err")"
echo "scaling_report_test: OK"
