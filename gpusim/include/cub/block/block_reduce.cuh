// cub::BlockReduce on the simulated GPUs: every thread stores its value in the block's shared
// temp storage, one barrier, then thread 0 combines them in a fixed pairwise tree. As with CUB,
// only thread 0's result is defined, and the temp storage may be reused only after a
// __syncthreads (a kernel that forgets it reads a half-overwritten reduction here too).
#pragma once

#include <cuda_runtime.h>

namespace cub {

template <typename T, int BLOCK_DIM_X, int ALGORITHM = 0, int BLOCK_DIM_Y = 1, int BLOCK_DIM_Z = 1>
class BlockReduce {
  static constexpr int kThreads = BLOCK_DIM_X * BLOCK_DIM_Y * BLOCK_DIM_Z;

 public:
  struct TempStorage {
    T partial[kThreads];
  };

  __device__ explicit BlockReduce(TempStorage& temp) : temp_(temp) {}

  template <class ReductionOp>
  __device__ T Reduce(T input, ReductionOp op) {
    return Reduce(input, op, kThreads);
  }

  // Over the first `valid` threads' inputs.
  template <class ReductionOp>
  __device__ T Reduce(T input, ReductionOp op, int valid) {
    const ::gpusim::detail::ThreadView& me = ::gpusim::detail::Current("cub::BlockReduce");
    if (int(me.block_dim.x * me.block_dim.y * me.block_dim.z) != kThreads)
      ::gpusim::detail::OutsideKernel("cub::BlockReduce with a block size other than its template's");
    const int t = int(me.linear);
    temp_.partial[t] = input;
    __syncthreads();
    if (t != 0) return input;
    for (int stride = 1; stride < valid; stride *= 2)
      for (int i = 0; i + stride < valid; i += 2 * stride) temp_.partial[i] = op(temp_.partial[i], temp_.partial[i + stride]);
    return temp_.partial[0];
  }

  __device__ T Sum(T input) {
    return Reduce(input, [](const T& a, const T& b) { return a + b; });
  }

 private:
  TempStorage& temp_;
};

}  // namespace cub
