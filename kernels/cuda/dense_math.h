// The precision of the CUDA backend's dense products (cuBLAS's compute type), in a header of its
// own so that host code can name it without the CUDA headers.
#pragma once

namespace xmlt::kernels::cuda {

// kFp32 multiplies in full float; kTf32 lets the tensor cores round the inputs to TF32 (10-bit
// mantissa, products accumulated in float): several times faster, relative error ~1e-3; kBf16
// rounds them to bfloat16 (7-bit mantissa, float accumulation): faster still, error ~1e-2.
enum class Math { kFp32, kTf32, kBf16 };

}  // namespace xmlt::kernels::cuda
