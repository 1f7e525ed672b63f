#!/usr/bin/env bash
# Proof that the simulated GPUs are not a mock: in a temporary copy of the source, applies one
# one-line fault at a time to the CUDA backend, rebuilds the simulated-GPU build, runs the CUDA
# tests and reports whether they fail. Every fault must be caught. The output of the last run is
# kept in docs/gpu-sim-faults.txt.
# Usage: scripts/gpu-sim-faults.sh [output file]   (about 15 minutes on two cores)
# The tests run through ctest (label kernels_cuda, XMLT_REQUIRE_GPU=1), each in its own process.
set -euo pipefail
cd "$(dirname "$0")/.."
out=${1:-docs/gpu-sim-faults.txt}
[[ $out == /* ]] || out=$PWD/$out
bash scripts/setup.sh
copy=$(mktemp -d)
trap 'rm -rf "$copy"' EXIT
git ls-files -z | xargs -0 cp --parents -t "$copy"
cd "$copy"
cmake -S . -B build -DCMAKE_BUILD_TYPE=Release -DXMLT_CUDA=SIM -DXMLT_BUILD_BENCHMARKS=OFF >/dev/null
cmake --build build -j"$(nproc)" --target kernels_cuda_tests >/dev/null

# file | the line as it is | the line with the fault | what the fault is
faults=(
  "kernels/cuda/sparse_mlp.cu|    for (uint64_t e = begin; e < end; ++e)|    for (uint64_t e = begin; e + 1 < end; ++e)|an index off by one: the first layer's forward pass skips each row's last feature"
  "kernels/cuda/softmax_loss.cu|  __syncthreads();  // publishes stats, and frees temp for the second reduction|  // (barrier removed)|a missing __syncthreads: the softmax's threads read the row's max and sum before thread 0 has written them"
  "kernels/cuda/sparse_mlp.cu|  Gemm(ctx.blas, ctx.math, Op::kNone, Op::kTranspose, rows, n_out, n_in, 1.0f, in, n_in,|  Gemm(ctx.blas, ctx.math, Op::kNone, Op::kNone, rows, n_out, n_in, 1.0f, in, n_in,|a wrong transpose in one GEMM: the dense layers' forward product takes W instead of W^T"
  "kernels/cuda/cuda_mlp.cu|  m.Wait();\n  return {m.loss_host.data()[0], device_batch.labeled_rows};|  return {m.loss_host.data()[0], device_batch.labeled_rows};|a stream synchronization removed: TrainBatch reads the loss from pinned memory before the copy has run"
  "kernels/cuda/ring_all_reduce.cu|    XMLT_CUDA_CHECK(cudaStreamWaitEvent(stream, EventOf(sender, p, step - 1).get(), 0));|    // (wait removed)|a missing event wait in the ring: a GPU copies its neighbour's chunk before the neighbour has added into it"
  "kernels/cuda/ring_all_reduce.cu|    const size_t chunk = reduce ? (k + 2 * n - 1 - s) % n : (k + n - s) % n;|    const size_t chunk = reduce ? (k + 2 * n - 1 - s) % n : (k + n + 1 - s) % n;|a wrong chunk in the ring's all-gather: each GPU forwards the chunk after the one it received"
  "kernels/cuda/replica_kernels.cu|      const float next = values[j] + gamma * (current[j] - previous[j]);|      const float next = values[j] + gamma * (previous[j] - current[j]);|the global momentum's sign flipped on the GPUs (heavy ball)"
  "kernels/cuda/elastic_force.cu|    pulls[j] = (first ? 0.0f : pulls[j]) + c;|    pulls[j] = pulls[j] + c;|the elastic force's pulls not cleared: each merge adds the last merge's pulls again"
)

{
  echo "# scripts/gpu-sim-faults.sh: one-line faults in the CUDA backend against its tests on the simulated GPUs"
  echo "# (commit $(git -C "$OLDPWD" rev-parse --short HEAD 2>/dev/null || echo unknown), $(date -u +%Y-%m-%d))"
} > "$out"
missed=0
for entry in "${faults[@]}"; do
  IFS='|' read -r file before after what <<< "$entry"
  cp "$file" "$file.orig"
  python3 - "$file" "$before" "$after" <<'PY'
import sys
path, before, after = sys.argv[1], sys.argv[2].replace('\\n', '\n'), sys.argv[3].replace('\\n', '\n')
text = open(path).read()
if text.count(before) != 1:
    sys.exit(f"{path}: the line to break is not there exactly once: {before!r}")
open(path, 'w').write(text.replace(before, after))
PY
  echo >> "$out"
  echo "== $what ($file)" >> "$out"
  if ! cmake --build build -j"$(nproc)" --target kernels_cuda_tests > build.log 2>&1; then
    echo "caught: the build fails" >> "$out"
  else
    # Through ctest, as CI runs them: each test in a process of its own, so that one test's
    # failure cannot spill into the next.
    set +e
    XMLT_REQUIRE_GPU=1 ctest --test-dir build -L kernels_cuda --timeout 600 > tests.log 2>&1
    status=$?
    set -e
    sed -n '/The following tests FAILED/,$p' tests.log | grep -E '^\s+[0-9]+ - ' |
      sed -E 's/^\s+[0-9]+ - /  /' > failed.txt || true
    if [[ $status -ne 0 ]]; then
      echo "caught: $(wc -l < failed.txt) tests fail:" >> "$out"
      cat failed.txt >> "$out"
    else
      echo "MISSED: every test passes" >> "$out"
      missed=$((missed + 1))
    fi
  fi
  # A copy, not a move: the restored file must be newer than the faulty build, or make would keep
  # this fault's object file in the builds of the next faults.
  cp "$file.orig" "$file"
  rm "$file.orig"
done
echo >> "$out"
echo "faults missed: $missed of ${#faults[@]}" >> "$out"
cat "$out"
[[ $missed -eq 0 ]]
