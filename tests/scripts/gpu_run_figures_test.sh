#!/usr/bin/env bash
# scripts/gpu-run-figures.py on a hand-made run folder: the header, each step's outcome, the
# benchmark JSON and the PyTorch peer's last line reach the document; bad input is refused.
# Usage: gpu_run_figures_test.sh <project source dir>
set -euo pipefail
tool=$1/scripts/gpu-run-figures.py
run=$(mktemp -d)
trap 'rm -rf "$run"' EXIT
cat > "$run/run.log" <<'LOG'
xmltrain GPU run 2026-11-25T10:00Z, commit 0123abc
gpu: NVIDIA H100 80GB HBM3, 81559 MiB, 580.65.06
cuda: Cuda compilation tools, release 13.0, V13.0.48
mpi: AUTO
build: exit 0 after 121 s
ctest: exit 1 after 80 s
LOG
echo '{"context": {"num_cpus": 16}, "benchmarks": [{"name": "CudaCopyBandwidth", "real_time": 2.5}]}' \
  > "$run/bench_cuda.json"
printf 'warming up\n{"peer": "torch", "samples_per_s": 51234.5}\n' > "$run/torch-amazon670k.log"

python3 "$tool" "$run" > "$run/figures.json"
python3 - "$run/figures.json" <<'PY'
import json, sys
d = json.load(open(sys.argv[1]))
assert d["header"]["gpu"] == "NVIDIA H100 80GB HBM3, 81559 MiB, 580.65.06", d["header"]
assert d["header"]["cuda"].endswith("V13.0.48") and d["header"]["run"].endswith("0123abc"), d["header"]
assert d["steps"] == {"build": {"exit": 0, "seconds": 121}, "ctest": {"exit": 1, "seconds": 80}}, d["steps"]
assert d["benchmarks"]["bench_cuda"]["benchmarks"][0]["real_time"] == 2.5
assert d["torch"]["amazon670k"]["samples_per_s"] == 51234.5
PY

echo 'not json' > "$run/bench_cuda.json"
if python3 "$tool" "$run" > /dev/null 2> "$run/err"; then echo "FAIL: a broken benchmark JSON passed"; exit 1; fi
grep -q 'bench_cuda.json: not JSON' "$run/err"
if python3 "$tool" "$run/absent" > /dev/null 2> "$run/err"; then echo "FAIL: a missing run passed"; exit 1; fi
grep -q 'run.log: not found' "$run/err"
echo "gpu-run-figures.py: ok"
