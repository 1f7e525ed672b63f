#!/usr/bin/env bash
# Test of the tools that scripts/demo.sh uses to compare runs: scripts/time_to_accuracy.py (the
# table: target, time and mega-batches to it, speed-up, best and final P@1) and scripts/plot.py
# --metrics --kind time (the figure), on two small hand-made metrics files. Builds nothing.
# The figure is checked only when an interpreter with matplotlib is found (as sweep_tools_test.sh
# finds it), otherwise that part is skipped with a message.
# Usage: tests/scripts/time_to_accuracy_test.sh [SOURCE_DIR]
set -euo pipefail

fail() { echo "time_to_accuracy_test: FAIL: $*" >&2; exit 1; }

source_dir=${1:-$(cd "$(dirname "$0")/../.." && pwd)}
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

# Two runs evaluated after every mega-batch: "fast" reaches P@1 0.30 at 2 s (mega-batch 2),
# "slow" at 3 s (mega-batch 2) and peaks at 0.40, then falls back to 0.35.
cat >"$work/fast.jsonl" <<'EOF'
{"epoch": 0.5, "megabatch": 1, "train_time_s": 1.0, "p1": 0.10, "p3": 0.05, "p5": 0.04, "loss": 9.0}
{"epoch": 1.0, "megabatch": 2, "train_time_s": 2.0, "p1": 0.30, "p3": 0.20, "p5": 0.15, "loss": 8.0}
{"epoch": 1.5, "megabatch": 3, "train_time_s": 3.0, "p1": 0.32, "p3": 0.21, "p5": 0.16, "loss": 7.9}
EOF
cat >"$work/slow.jsonl" <<'EOF'
{"epoch": 0.5, "megabatch": 1, "train_time_s": 1.5, "p1": 0.12, "p3": 0.06, "p5": 0.05, "loss": 9.0}

{"epoch": 1.0, "megabatch": 2, "train_time_s": 3.0, "p1": 0.31, "p3": 0.20, "p5": 0.15, "loss": 8.1}
{"epoch": 1.5, "megabatch": 3, "train_time_s": 4.5, "p1": 0.40, "p3": 0.25, "p5": 0.18, "loss": 7.5}
{"epoch": 2.0, "megabatch": 4, "train_time_s": 6.0, "p1": 0.35, "p3": 0.22, "p5": 0.17, "loss": 7.7}
EOF
touch "$work/empty.jsonl"

tta() { python3 "$source_dir/scripts/time_to_accuracy.py" "$@"; }
expect_row() {  # expect_row OUTPUT ROW: the table holds exactly this row
  grep -qxF -- "$2" <<<"$1" || { echo "$1" >&2; fail "no row '$2'"; }
}

# 1. The default target is 0.95 x the lowest best P@1: 0.95 x 0.32 = 0.304. The baseline is the
# configuration slowest to it (the first of equals); a single seed says so in its cell.
out=$(tta fast="$work/fast.jsonl" slow="$work/slow.jsonl") || fail "time_to_accuracy.py exited with $?"
grep -qx "target P@1 = 0.3040" <<<"$out" || { echo "$out" >&2; fail "wrong default target"; }
# Times say their clock (issue 62, point 2): files listing no devices are one device's, on the wall clock.
grep -qxF "| run | seeds | MLP: time to target (wall s) | MLP: mega-batches to target | speed-up over fast | MLP: best P@1 | at (wall s) | MLP: last P@1 | total (wall s) | wall s | final model | final model: P@1 |" \
  <<<"$out" || { echo "$out" >&2; fail "no table header"; }
expect_row "$out" "| fast | 1 | 3.00 | 3 | baseline | 0.3200 | 3.00 | 0.3200 | 3.00 | - | - | - |"
expect_row "$out" "| slow | 1 | 3.00 | 2 | 1.00x (one seed) | 0.4000 | 4.50 | 0.3500 | 6.00 | - | - | - |"
grep -q "^Speed-up: .*paired seed by seed.*95% t interval" <<<"$out" || { echo "$out" >&2; fail "no note on the interval"; }
out=$(tta --clock virtual fast="$work/fast.jsonl" slow="$work/slow.jsonl") || fail "--clock virtual failed"
grep -qF "| MLP: time to target (virtual s) |" <<<"$out" || { echo "$out" >&2; fail "--clock virtual not in the header"; }

# 1b. The speed-ups again at several targets (issue 62, point 1), fractions of the lowest best P@1,
# 0.32: at 0.256, 0.288 and 0.3136 fast is 1.5x sooner than slow; at 0.304 both take 3 s.
out=$(tta --baseline slow fast="$work/fast.jsonl" slow="$work/slow.jsonl") || fail "--baseline slow failed"
grep -qxF "| run | at 0.8 x = 0.2560 | at 0.9 x = 0.2880 | at 0.95 x = 0.3040 | at 0.98 x = 0.3136 |" <<<"$out" \
  || { echo "$out" >&2; fail "no table at several targets"; }
expect_row "$out" "| fast | 1.50x (one seed) | 1.50x (one seed) | 1.00x (one seed) | 1.50x (one seed) |"
out=$(tta --fractions '' --baseline slow fast="$work/fast.jsonl" slow="$work/slow.jsonl") || fail "--fractions '' failed"
grep -q "several targets" <<<"$out" && { echo "$out" >&2; fail "--fractions '' still printed the table"; }
tta --fractions 0.5,1.5 fast="$work/fast.jsonl" >/dev/null 2>&1 && fail "--fractions 1.5 accepted"

# 2. --target: fast reaches 0.30 at 2 s, slow at 3 s, so fast is 1.5x faster; 0.38 only slow reaches.
out=$(tta --target 0.30 fast="$work/fast.jsonl" slow="$work/slow.jsonl") || fail "--target 0.30 failed"
expect_row "$out" "| fast | 1 | 2.00 | 2 | 1.50x (one seed) | 0.3200 | 3.00 | 0.3200 | 3.00 | - | - | - |"
expect_row "$out" "| slow | 1 | 3.00 | 2 | baseline | 0.4000 | 4.50 | 0.3500 | 6.00 | - | - | - |"
out=$(tta --target 0.38 fast="$work/fast.jsonl" slow="$work/slow.jsonl") || fail "--target 0.38 failed"
expect_row "$out" "| fast | 1 | not reached | - | - | 0.3200 | 3.00 | 0.3200 | 3.00 | - | - | - |"
expect_row "$out" "| slow | 1 | 4.50 | 3 | baseline | 0.4000 | 4.50 | 0.3500 | 6.00 | - | - | - |"

# 3. --target-fraction scales the lowest best P@1: 0.5 x 0.32 = 0.16.
out=$(tta --target-fraction 0.5 fast="$work/fast.jsonl" slow="$work/slow.jsonl") || fail "--target-fraction failed"
grep -qx "target P@1 = 0.1600" <<<"$out" || { echo "$out" >&2; fail "wrong target with --target-fraction 0.5"; }
expect_row "$out" "| fast | 1 | 2.00 | 2 | 1.50x (one seed) | 0.3200 | 3.00 | 0.3200 | 3.00 | - | - | - |"

# 3b. --summary: the final model's P@1 from the run's stdout, named as the model it is, beside
# the MLP's figures (issue 62, point 3).
printf 'epoch 1\n{"summary": true, "p1": 0.3333, "ranker": {"used": true, "fitted": true}}\n' >"$work/fast.log"
printf '{"summary": true, "p1": 0.41}\n' >"$work/slow.log"
out=$(tta --target 0.30 --summary fast="$work/fast.log" --summary slow="$work/slow.log" fast="$work/fast.jsonl" \
      slow="$work/slow.jsonl") || fail "--summary failed"
expect_row "$out" "| fast | 1 | 2.00 | 2 | 1.50x (one seed) | 0.3200 | 3.00 | 0.3200 | 3.00 | - | MLP + ranker | 0.3333 |"
expect_row "$out" "| slow | 1 | 3.00 | 2 | baseline | 0.4000 | 4.50 | 0.3500 | 6.00 | - | MLP | 0.4100 |"

# 3c. Seeds (issue 62, point 4): a name given several times is one configuration; the speed-up is
# the paired per-seed ratio with its 95% t interval, and an interval holding 1 is no difference.
seed_run() {  # seed_run FILE SECONDS: reaches P@1 0.30 at SECONDS (mega-batch 2)
  printf '{"megabatch": 1, "train_time_s": 1.0, "p1": 0.10}\n{"megabatch": 2, "train_time_s": %s, "p1": 0.30}\n' "$2" >"$1"
}
for i in 1 2 3; do seed_run "$work/a$i.jsonl" 2.0; done
seed_run "$work/b1.jsonl" 3.0; seed_run "$work/b2.jsonl" 3.1; seed_run "$work/b3.jsonl" 2.9
seed_run "$work/c1.jsonl" 3.0; seed_run "$work/c2.jsonl" 1.5; seed_run "$work/c3.jsonl" 2.2
out=$(tta --target 0.30 --baseline b a="$work/a1.jsonl" a="$work/a2.jsonl" a="$work/a3.jsonl" b="$work/b1.jsonl" \
      b="$work/b2.jsonl" b="$work/b3.jsonl") || fail "three seeds failed"
# log ratios ln 1.5, ln 1.55, ln 1.45: mean 1.499x, t(2) = 4.303, interval 1.38-1.63.
expect_row "$out" "| a | 3 | 2.00 ± 0.00 | 2 | 1.50x (1.38-1.63, 3 seeds) | 0.3000 ± 0.0000 | 2.00 | 0.3000 ± 0.0000 | 2.00 | - | - | - |"
out=$(tta --target 0.30 --baseline c a="$work/a1.jsonl" a="$work/a2.jsonl" a="$work/a3.jsonl" c="$work/c1.jsonl" \
      c="$work/c2.jsonl" c="$work/c3.jsonl") || fail "three noisy seeds failed"
grep -qF "| a | 3 | 2.00 ± 0.00 | 2 | no difference (1.07x, " <<<"$out" || { echo "$out" >&2; fail "a noisy speed-up is not 'no difference'"; }
if tta --baseline nobody a="$work/a1.jsonl" >/dev/null 2>"$work/base.err"; then fail "an unknown --baseline was taken"; fi
grep -q -- "--baseline nobody names no run" "$work/base.err" || fail "no clear message for an unknown --baseline"

# 4. A metrics file without evaluations is an error that names the file.
if tta a="$work/fast.jsonl" b="$work/empty.jsonl" >/dev/null 2>"$work/empty.err"; then
  fail "an empty metrics file was accepted"
fi
grep -q "empty.jsonl has no evaluations" "$work/empty.err" || fail "no clear message for an empty metrics file"

# 5. A run named slide (--algo slide, one CPU device, wall clock) is labelled "SLIDE (1 CPU)", gets no
# speed-up (its clock is not the others'), is not the baseline the others are compared with, and
# the table is followed by a note saying so.
cp "$work/slow.jsonl" "$work/slide.jsonl"
out=$(tta --target 0.30 fast="$work/fast.jsonl" slide="$work/slide.jsonl") || fail "a slide run failed"
expect_row "$out" "| fast | 1 | 2.00 | 2 | baseline | 0.3200 | 3.00 | 0.3200 | 3.00 | - | - | - |"
expect_row "$out" "| SLIDE (1 CPU) | 1 | 3.00 | 2 | - | 0.4000 | 4.50 | 0.3500 | 6.00 | - | - | - |"
grep -q "^SLIDE (1 CPU): one CPU device .*wall-clock seconds" <<<"$out" || { echo "$out" >&2; fail "no note on SLIDE's device"; }
if grep -q "^| slide " <<<"$out"; then fail "the slide run kept its bare name"; fi
out=$(tta fast="$work/fast.jsonl" slow="$work/slow.jsonl") || fail "time_to_accuracy.py exited with $?"
if grep -q "SLIDE" <<<"$out"; then fail "a note on SLIDE without a slide run"; fi

# 6. The figure of scripts/demo.sh: P@1 against time for both runs, from the metrics files.
python=${PYTHON:-}
if [[ -z $python ]]; then
  python=python3
  if ! python3 -c "import matplotlib" 2>/dev/null && [[ -x /usr/bin/python3 ]]; then
    python=/usr/bin/python3
  fi
fi
if "$python" -c "import matplotlib" 2>/dev/null; then
  png=$work/figure/time-to-accuracy.png
  printed=$("$python" "$source_dir/scripts/plot.py" --metrics "fast=$work/fast.jsonl" --metrics="slow=$work/slow.jsonl" \
            --kind time --out "$png" --title "two runs") || fail "plot.py --metrics --kind time failed"
  [[ $printed == "$png" ]] || fail "plot.py printed '$printed', not the figure's path"
  "$python" -c 'import sys; sys.exit(open(sys.argv[1], "rb").read(8) != b"\x89PNG\r\n\x1a\n")' "$png" \
    || fail "$png is not a PNG"
  # With a slide run: its own line, labelled SLIDE (1 CPU), in SLIDE's colour and style.
  "$python" - "$source_dir/scripts" "$work" <<'EOF' || fail "plot.py does not draw SLIDE as its own line"
import sys
sys.path.insert(0, sys.argv[1])
import plot
plot.ensure_matplotlib()
lines = {}
real_save = plot.save
def keep_lines(fig, out):
    for line in fig.axes[0].get_lines():
        lines[line.get_label()] = (line.get_color(), line.get_linestyle())
    return real_save(fig, out)
plot.save = keep_lines
runs = plot.load_metrics_files([f"fast={sys.argv[2]}/fast.jsonl", f"slide={sys.argv[2]}/slide.jsonl"])
plot.make_figure(runs, "time", f"{sys.argv[2]}/figure/slide.png", ["variant"])
assert set(lines) == {"fast", plot.SLIDE_LABEL}, lines
assert lines[plot.SLIDE_LABEL] == (plot.SLIDE_COLOUR, plot.SLIDE_STYLE), lines
assert lines["fast"][0] != plot.SLIDE_COLOUR, lines
lines.clear()
# The target is marked (issue 62, point 4): a dotted line at its P@1, named in the legend.
plot.make_figure(runs, "time", f"{sys.argv[2]}/figure/target.png", ["variant"], target=0.3)
assert "target P@1 0.300" in lines and lines["target P@1 0.300"][1] == ":", lines
EOF
else
  echo "time_to_accuracy_test: figure part skipped: $python cannot import matplotlib (install python3-matplotlib)"
fi

echo "time_to_accuracy_test: ok"
