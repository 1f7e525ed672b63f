// Whether a product reads an operand as stored or transposed: the products of gemm.h and the
// direct kernels of direct_gemm.h, which gemm.h dispatches to, both take it.
#pragma once

namespace xmlt::kernels::cpu {

enum class Op { kNone, kTranspose };

}  // namespace xmlt::kernels::cpu
