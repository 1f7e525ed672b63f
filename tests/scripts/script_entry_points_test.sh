#!/usr/bin/env bash
# Issue: reliability, fifth round, row 14. `scripts/demo.sh --help` built the project, trained with
# --help as a flag and ended in a Python traceback; `compare-peers.sh SET --systems xmltrain`
# installed every peer library (libpecos brings PyTorch, about 6 GB). Here demo.sh --help prints
# its usage and runs nothing, and compare-peers.sh asks pip for the chosen systems' packages alone.
# Builds, installs and downloads nothing: the venv is a stub whose pip records what it is asked.
# Usage: tests/scripts/script_entry_points_test.sh [SOURCE_DIR]
set -euo pipefail

fail() { echo "script_entry_points_test: FAIL: $*" >&2; exit 1; }

source_dir=${1:-$(cd "$(dirname "$0")/../.." && pwd)}
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

# demo.sh --help: usage on stdout, exit 0, and nothing made (no build, no demo folder).
(cd "$work" && XMLT_DEMO_DIR="$work/demo" bash "$source_dir/scripts/demo.sh" --help >"$work/help.out" 2>"$work/help.err") ||
  fail "demo.sh --help exited $?: $(cat "$work/help.err")"
grep -q '^Usage: scripts/demo.sh' "$work/help.out" || fail "demo.sh --help printed no usage: $(cat "$work/help.out")"
[[ ! -s $work/help.err ]] || fail "demo.sh --help wrote on stderr: $(cat "$work/help.err")"
[[ ! -e $work/demo ]] || fail "demo.sh --help made the demo folder"

# demo.sh builds the xmltrain program alone, its compiler output in DIR/build.log rather than on the
# terminal (issue 62, point 5: it built every test, the CUDA sources and the Python module, warnings
# scrolling past). A copy of it beside stub build scripts that record their arguments; the stub
# build fails, which ends the demo before anything is trained.
mkdir -p "$work/tree/scripts"
cp "$source_dir/scripts/demo.sh" "$work/tree/scripts/"
printf '#!/bin/sh\necho "$@" >>"%s/build-targets.args"\necho "warning: a compiler warning"\nexit 1\n' "$work" \
  >"$work/tree/scripts/build-targets.sh"
printf '#!/bin/sh\necho "$@" >>"%s/build.args"\nexit 1\n' "$work" >"$work/tree/scripts/build.sh"
if XMLT_DEMO_DIR="$work/demo" bash "$work/tree/scripts/demo.sh" >"$work/demo.out" 2>"$work/demo.err"; then
  fail "demo.sh went on after a failed build"
fi
[[ $(cat "$work/build-targets.args" 2>/dev/null) == xmltrain ]] || fail "demo.sh did not build the xmltrain target alone"
[[ ! -e $work/build.args ]] || fail "demo.sh built the whole project (scripts/build.sh)"
grep -q "a compiler warning" "$work/demo/build.log" || fail "the build's output is not in DIR/build.log"
if grep -q "a compiler warning" "$work/demo.out"; then fail "the build's output went to the terminal"; fi
grep -q "the build failed; its output is in $work/demo/build.log" "$work/demo.err" || fail "no clear message for a failed build"

# compare-peers.sh on stand-in files with a stub venv: its python finds no package (so the script
# installs) and its pip records its arguments and fails, which ends the script before anything is
# built or trained.
mkdir -p "$work/data/bibtex" "$work/venv/bin"
touch "$work/data/bibtex/train.txt" "$work/data/bibtex/test.txt"
printf '#!/bin/sh\necho "$@" >>"%s/python.log"\nexit 1\n' "$work" >"$work/venv/bin/python"
printf '#!/bin/sh\necho "$@" >>"%s/pip.log"\nexit 1\n' "$work" >"$work/venv/bin/pip"
chmod +x "$work/venv/bin/python" "$work/venv/bin/pip"
peers() {
  rm -f "$work/pip.log" "$work/python.log"
  XMLT_DATA_DIR="$work/data" XMLT_PEERS_VENV="$work/venv" XMLT_BUILD_DIR="$work/no-build" \
    bash "$source_dir/scripts/compare-peers.sh" bibtex "$@" >"$work/peers.out" 2>"$work/peers.err"
}
if peers --systems xmltrain; then fail "compare-peers.sh went on past a failed pip"; fi
grep -q 'import numpy,scipy$' "$work/python.log" || fail "the venv was checked for: $(cat "$work/python.log")"
pip_args=$(cat "$work/pip.log")
[[ $pip_args == *numpy==* && $pip_args == *scipy==* ]] || fail "--systems xmltrain: pip was asked for: $pip_args"
for peer in libpecos omikuji napkinxc; do
  [[ $pip_args != *$peer* ]] || fail "--systems xmltrain installs $peer: $pip_args"
done
if peers --systems=bonsai,xmltrain; then fail "compare-peers.sh went on past a failed pip"; fi
pip_args=$(cat "$work/pip.log")
[[ $pip_args == *omikuji==* && $pip_args != *libpecos* && $pip_args != *napkinxc* ]] ||
  fail "--systems=bonsai,xmltrain: pip was asked for: $pip_args"
# Every system, by default.
if peers; then fail "compare-peers.sh went on past a failed pip"; fi
pip_args=$(cat "$work/pip.log")
[[ $pip_args == *libpecos==* && $pip_args == *omikuji==* && $pip_args == *napkinxc==* ]] ||
  fail "the default systems: pip was asked for: $pip_args"
# An unknown system is refused before anything is installed.
set +e
peers --systems xmltrain,bogus
status=$?
set -e
[[ $status -eq 2 ]] || fail "--systems xmltrain,bogus exited $status"
grep -q "unknown system 'bogus'" "$work/peers.err" || fail "--systems bogus: $(cat "$work/peers.err")"
[[ ! -e $work/pip.log ]] || fail "--systems bogus ran pip"
echo "script_entry_points_test: OK"
