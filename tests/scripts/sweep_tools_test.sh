#!/usr/bin/env bash
# End-to-end test of the experiment tools: scripts/sweep.py (a tiny sweep, its index and resuming),
# scripts/plot.py (two kinds of figure) and scripts/report.py, on a tiny generated dataset; SLIDE
# (--algo slide, one CPU device) beside two multi-device algorithms, as its own line and row.
# Usage: tests/scripts/sweep_tools_test.sh XMLTRAIN [SOURCE_DIR]
# Environment: PYTHON, an interpreter with matplotlib (default: python3 when it has matplotlib,
# else /usr/bin/python3, Debian's, where python3-matplotlib installs it).
set -euo pipefail

fail() { echo "sweep_tools_test: FAIL: $*" >&2; exit 1; }

xmltrain=${1:?usage: sweep_tools_test.sh XMLTRAIN [SOURCE_DIR]}
source_dir=${2:-$(cd "$(dirname "$0")/../.." && pwd)}
[[ -x $xmltrain ]] || fail "$xmltrain is not an executable"

python=${PYTHON:-}
if [[ -z $python ]]; then
  python=python3
  if ! python3 -c "import matplotlib" 2>/dev/null && [[ -x /usr/bin/python3 ]]; then
    python=/usr/bin/python3
  fi
fi
"$python" -c "import matplotlib" 2>/dev/null \
  || fail "$python cannot import matplotlib: install python3-matplotlib (scripts/setup.sh) or set PYTHON"

work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

"$xmltrain" gen --rows 600 --test-rows 200 --features 300 --labels 30 --seed 3 --out "$work/data" >/dev/null 2>&1 \
  || fail "xmltrain gen failed"

sweep() {
  "$python" "$source_dir/scripts/sweep.py" --out "$work/sweep" --xmltrain "$xmltrain" \
    --train "$work/data/train.txt" --test "$work/data/test.txt" \
    --grid algo=adaptive,elastic,slide --seeds 1,2 --fixed devices=cpu:2 --fixed clock=virtual \
    --fixed epochs=2 --fixed mega-batch=5 --fixed batch=32 --fixed eval-every=1 --target 0.2 -j 2
}

# 1. The sweep: 6 runs, all ok, each with its metrics and log; slide's without the fixed
# multi-device flags (--devices, --clock), which xmltrain refuses for it.
sweep 2>"$work/sweep1.err" || { code=$?; cat "$work/sweep1.err" >&2; fail "the sweep exited with $code"; }
index=$work/sweep/index.jsonl
[[ -f $index ]] || fail "no index.jsonl"
ok=$(grep -c '"status": "ok"' "$index" || true)
[[ $ok -eq 6 ]] || { cat "$index" >&2; fail "the index holds $ok completed runs, not 6"; }
[[ $(grep -c '^\[[0-9]/6\] done' "$work/sweep1.err") -eq 6 ]] || { cat "$work/sweep1.err" >&2; fail "no progress lines"; }
# Each says the time elapsed and, but for the last, the time left (issue 62, point 6).
[[ $(grep -c '^\[[1-5]/6\] done .* ([0-9]*:[0-9][0-9] elapsed, about [0-9]*:[0-9][0-9] left)$' "$work/sweep1.err") -eq 5 ]] \
  || { cat "$work/sweep1.err" >&2; fail "progress lines without elapsed time and time left"; }
grep -q '^\[6/6\] done .* ([0-9]*:[0-9][0-9] elapsed)$' "$work/sweep1.err" || { cat "$work/sweep1.err" >&2; fail "no elapsed time at the end"; }
for id in $("$python" -c 'import json,sys; [print(json.loads(l)["id"]) for l in open(sys.argv[1])]' "$index"); do
  [[ -s $work/sweep/runs/$id.jsonl && -s $work/sweep/runs/$id.log ]] || fail "run $id lacks its metrics or log"
done
"$python" - "$index" "$work/sweep/runs" <<'EOF' || fail "index lines lack summary numbers"
import json, sys
for line in open(sys.argv[1]):
    r = json.loads(line)
    for key in ("mlp_best_p1", "mlp_last_p1", "final_model", "final_p1", "final_p3", "final_p5", "ranker_holdout_rows",
                "train_time_s", "megabatches", "perturbations", "time_to_target_s"):
        assert key in r, (key, r)
    assert "p1" not in r, "a P@1 that does not say whose it is"
    assert r["mlp_best_p1"] > 0 and r["megabatches"] > 0, r
    # final_p1 is the final model's: the summary's (with the shortlist ranker), not the last evaluation's.
    summary = [json.loads(l) for l in open(sys.argv[2] + "/" + r["id"] + ".log") if l.startswith("{") and '"summary"' in l][-1]
    assert r["final_p1"] == summary["p1"] and r["mlp_best_p1"] == summary["mlp_best_p1"], (r, summary)
    ranker = summary.get("ranker", {})
    assert r["final_model"] == ("MLP + ranker" if ranker.get("used") else "MLP"), (r, summary)
    assert r["ranker_holdout_rows"] == (ranker.get("holdout_rows", 0) if ranker.get("fitted") else 0), (r, summary)
    slide = r["flags"]["algo"] == "slide"
    assert ("devices" in r["flags"]) != slide and ("clock" in r["flags"]) != slide, r
EOF

# 2. Resume: nothing runs again, the index is unchanged.
before=$(md5sum <"$index")
sweep 2>"$work/sweep2.err" || { code=$?; cat "$work/sweep2.err" >&2; fail "the second sweep exited with $code"; }
grep -q "6 already done, 0 to run" "$work/sweep2.err" || { cat "$work/sweep2.err" >&2; fail "the second sweep ran again"; }
if grep -q '^\[' "$work/sweep2.err"; then fail "the second sweep ran runs again"; fi
[[ $(md5sum <"$index") == "$before" ]] || fail "resuming changed the index"

# 2b. --reuse: a second sweep sharing the adaptive runs takes them from the first without training.
"$python" "$source_dir/scripts/sweep.py" --out "$work/reuse" --xmltrain "$xmltrain" \
  --train "$work/data/train.txt" --test "$work/data/test.txt" --reuse "$work/sweep" \
  --grid algo=adaptive --seeds 1,2 --fixed devices=cpu:2 --fixed clock=virtual \
  --fixed epochs=2 --fixed mega-batch=5 --fixed batch=32 --fixed eval-every=1 -j 2 2>"$work/reuse.err" \
  || { code=$?; cat "$work/reuse.err" >&2; fail "the reusing sweep exited with $code"; }
grep -q "2 already done (2 from --reuse), 0 to run" "$work/reuse.err" || { cat "$work/reuse.err" >&2; fail "--reuse did not take the runs"; }
[[ $(grep -c '"status": "ok"' "$work/reuse/index.jsonl") -eq 2 ]] || fail "the reusing sweep's index lacks its 2 runs"
for id in $("$python" -c 'import json,sys; [print(json.loads(l)["id"]) for l in open(sys.argv[1])]' "$work/reuse/index.jsonl"); do
  cmp -s "$work/sweep/runs/$id.jsonl" "$work/reuse/runs/$id.jsonl" || fail "run $id's metrics were not copied"
done
if grep -q '"time_to_target_s"' "$work/reuse/index.jsonl"; then fail "a reused run kept the other sweep's target"; fi

# 3. Bad usage exits 2.
set +e
"$python" "$source_dir/scripts/sweep.py" --out "$work/bad" --xmltrain "$xmltrain" --train "$work/data/train.txt" \
  --grid no-such-flag=1,2 2>"$work/bad.err"
code=$?
set -e
[[ $code -eq 2 ]] || fail "an unknown flag gave exit code $code, not 2"
grep -q "unknown xmltrain train flag --no-such-flag" "$work/bad.err" || fail "no clear message for an unknown flag"

# 3b. Flags an algorithm ignores (xmltrain refuses them) are left out of its runs, its grid points
# that differ only in them are one run, and the dry run says so.
"$python" "$source_dir/scripts/sweep.py" --out "$work/ignored" --xmltrain "$xmltrain" --train "$work/data/train.txt" \
  --grid algo=adaptive,elastic --grid beta=4,8,16 --fixed pert-weights=raw --fixed devices=cpu:2 --seeds 1,2 \
  --dry-run >"$work/ignored.out" 2>"$work/ignored.err" || { cat "$work/ignored.err" >&2; fail "the dry run failed"; }
grep -q "^sweep: --algo elastic ignores --beta, --pert-weights: left out of its runs; its grid points that differ only in --beta are run once (4 runs fewer)$" \
  "$work/ignored.err" || { cat "$work/ignored.err" >&2; fail "the dry run does not say what elastic leaves out"; }
grep -q "8 to run" "$work/ignored.err" || { cat "$work/ignored.err" >&2; fail "not 6 adaptive and 2 elastic runs"; }
[[ $(grep -c -- "--algo elastic" "$work/ignored.out") -eq 2 ]] || { cat "$work/ignored.out" >&2; fail "elastic does not run once per seed"; }
if grep -- "--algo elastic" "$work/ignored.out" | grep -q -- "--beta\|--pert-weights"; then
  fail "an elastic run keeps --beta or --pert-weights"
fi
[[ $(grep -c -- "--algo adaptive.*--beta" "$work/ignored.out") -eq 6 ]] || fail "adaptive lost its --beta grid"

# 4. Figures and the report.
for kind in time batch-trace; do
  "$python" "$source_dir/scripts/plot.py" "$work/sweep" --kind "$kind" --out "$work/$kind.png" >/dev/null \
    || fail "plot.py --kind $kind failed"
  "$python" -c 'import sys; sys.exit(open(sys.argv[1], "rb").read(8) != b"\x89PNG\r\n\x1a\n")' "$work/$kind.png" \
    || fail "$kind.png is not a PNG"
done
"$python" "$source_dir/scripts/report.py" "$work/sweep" >/dev/null || fail "report.py failed"
report=$work/sweep/report.md
[[ -s $report ]] || fail "no report.md"
for algo in adaptive elastic "SLIDE (1 CPU)"; do
  grep -qF "| $algo |" "$report" || { cat "$report" >&2; fail "the report does not name $algo"; }
done
if grep -q "^| slide " "$report"; then fail "the report names SLIDE by its bare --algo"; fi
# The speed-up pairs the seeds: an interval over the 2 seeds, or "no difference" when it holds 1
# (issue 62, point 4); the baseline says it is one.
grep -F "| adaptive |" "$report" | grep -qE "\| ([0-9.]+x \(|no difference \([0-9.]+x, )[0-9.]+-[0-9.]+, 2 seeds\) \|" \
  || { cat "$report" >&2; fail "adaptive's speed-up has no interval over its seeds"; }
grep -F "| elastic |" "$report" | grep -qF "| baseline |" || { cat "$report" >&2; fail "elastic is not named the baseline"; }
grep -q "^Speed-up: .*paired seed by seed.*95% t interval" "$report" || { cat "$report" >&2; fail "no note on the interval"; }
# The speed-ups again at four targets (issue 62, point 1: a conclusion must not hang on where one
# target fell): a column per fraction of the lowest best P@1, adaptive's row with a cell in each.
grep -qE "^\| configuration \| speed-up at 0.8 x [0-9.]+ = [0-9.]+ \| speed-up at 0.9 x .* \| speed-up at 0.95 x .* \| speed-up at 0.98 x .* \|$" "$report" \
  || { cat "$report" >&2; fail "no table at several targets"; }
[[ $(sed -n '/^## Speed-up at several targets/,/^## /p' "$report" | grep -c "^| adaptive |") == 1 ]] \
  || { cat "$report" >&2; fail "adaptive is not in the table at several targets"; }
sed -n '/^## Speed-up at several targets/,/^## /p' "$report" | grep "^| adaptive |" | awk -F'|' 'NF != 7 { exit 1 }' \
  || { cat "$report" >&2; fail "adaptive's row at several targets does not have four cells"; }
# SLIDE's row has no speed-up over elastic (wall clock against the virtual one), and a note says why.
grep -F "| SLIDE (1 CPU) |" "$report" | grep -q " | - | [0-9.]* | [0-9.]* |$" || { cat "$report" >&2; fail "SLIDE got a speed-up"; }
# Times say their clock, and the wall time stands beside them (issue 62, point 2).
grep -qF "time to target (virtual s; SLIDE: wall clock) |" "$report" || { cat "$report" >&2; fail "no clock in the header"; }
grep -qF "| wall s |" "$report" || { cat "$report" >&2; fail "no wall time column"; }
# The MLP's figures and the final model's, each named (issue 62, point 3).
grep -qF "| MLP: best P@1 | MLP: best P@3 | MLP: best P@5 |" "$report" && grep -qF "| final model | final model: P@1 | MLP: time to target" "$report" \
  || { cat "$report" >&2; fail "the report does not name whose figures it shows"; }
grep -q "^MLP: the network's evaluations during training" "$report" || { cat "$report" >&2; fail "no note on the two models"; }
grep -q "^SLIDE (1 CPU): .*one CPU device.*against cpu:2 for the others.*wall-clock seconds" "$report" \
  || { cat "$report" >&2; fail "no note on SLIDE's device and clock"; }
# The time figure: SLIDE's own line in its colour and style, and an axis that names both clocks.
"$python" - "$source_dir/scripts" "$work/sweep" <<'EOF' || fail "plot.py does not draw SLIDE as its own line"
import sys
sys.path.insert(0, sys.argv[1])
import plot
plot.ensure_matplotlib()
seen = {}
real_save = plot.save
def keep(fig, out):
    ax = fig.axes[0]
    seen["lines"] = {line.get_label(): (line.get_color(), line.get_linestyle()) for line in ax.get_lines()}
    seen["x"] = ax.get_xlabel()
    return real_save(fig, out)
plot.save = keep
runs = plot.select(plot.load_index(sys.argv[2]), [])
plot.make_figure(runs, "time", sys.argv[2] + "/figures/check.png", plot.default_group_by(runs))
assert set(seen["lines"]) == {"adaptive", "elastic", plot.SLIDE_LABEL}, seen
assert seen["lines"][plot.SLIDE_LABEL] == (plot.SLIDE_COLOUR, plot.SLIDE_STYLE), seen
assert seen["x"] == "training time (virtual s; SLIDE: wall clock)", seen
EOF
grep -q "figures/time.png" "$report" || fail "the report does not link its figures"
[[ -s $work/sweep/figures/time.png && -s $work/sweep/figures/megabatch.png ]] || fail "report.py made no figures"

echo "sweep_tools_test: ok"
