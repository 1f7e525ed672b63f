// A simulated CUDA thread's indices and extents, apart from the builtins that read them
// (kernel_builtins.h): the scheduler's threads (block_state.h) carry them without the builtins.
#pragma once

#include "gpusim/vector_types.h"

namespace gpusim::detail {

// What one simulated CUDA thread knows of itself.
struct ThreadView {
  uint3 thread_idx;
  uint3 block_idx;
  dim3 block_dim;
  dim3 grid_dim;
  unsigned linear;  // thread index within the block
};

}  // namespace gpusim::detail
