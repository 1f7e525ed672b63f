// A device whose whole context is gone: on a GPU, a sticky CUDA error (an illegal address, a
// kernel trap, an uncorrectable ECC error...). Every later call in that context fails too, so
// every logical device sharing the GPU is lost with the one that saw it, not just that one.
// Thrown by the CUDA backend; the engine carries the fact back with the batch's result.
#pragma once

#include <stdexcept>

namespace xmlt::kernels {

class ContextLost : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

}  // namespace xmlt::kernels
