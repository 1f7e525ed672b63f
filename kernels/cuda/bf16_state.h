// The optimizer state in bf16 on the GPU, the kernels a dense layer's update runs on a block of
// its weights' gradient (kernels/cuda/sparse_mlp.cu) and, for tests, Adagrad's: enqueued on
// `stream`, device pointers. Their per-value arithmetic is bf16_state_math.cuh's.
#pragma once

#include <cuda_runtime.h>

#include <cstdint>

namespace xmlt::kernels::cuda {

// For j < n: v = momentum * widen(velocity[j]) + g[j]; w[j] -= lr * v; velocity[j] = v rounded
// stochastically with the noise of (key, index + j).
void MomentumStepBf16(cudaStream_t stream, float* w, uint16_t* velocity, const float* g, float momentum, float lr,
                      uint64_t n, uint32_t key, uint64_t index);
// For j < n: s = widen(squares[j]) + g[j]^2; w[j] -= lr * g[j] / (sqrt(s) + epsilon); squares[j] =
// s rounded stochastically with the noise of (key, index + j).
void AdagradStepBf16(cudaStream_t stream, float* w, uint16_t* squares, const float* g, float lr, float epsilon,
                     uint64_t n, uint32_t key, uint64_t index);

}  // namespace xmlt::kernels::cuda
