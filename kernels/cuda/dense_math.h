// The precision of the CUDA backend's dense products (cuBLAS's compute type), in a header of its
// own so that host code can name it without the CUDA headers.
#pragma once

#include "kernels/output_math.h"

namespace xmlt::kernels::cuda {

// kFp32 multiplies in full float; kTf32 lets the tensor cores round the inputs to TF32 (10-bit
// mantissa, products accumulated in float): several times faster, relative error ~1e-3; kBf16
// rounds them to bfloat16 (7-bit mantissa, float accumulation): faster still, error ~1e-2.
enum class Math { kFp32, kTf32, kBf16 };

// The dense products' precision for a run's --math.
inline Math DenseMath(OutputMath math) {
  switch (math) {
    case OutputMath::kTf32: return Math::kTf32;
    case OutputMath::kBf16: return Math::kBf16;
    case OutputMath::kFp32: break;
  }
  return Math::kFp32;
}

}  // namespace xmlt::kernels::cuda
