// The arithmetic of the output layer's three products in the training step (--math). The master
// weights, the momentum, the softmax and the sparse first layer stay in fp32 either way. On a CUDA
// device it is cuBLAS's compute type for every dense product (the output layer, and the hidden
// layers after the first where there are several).
#pragma once

#include <string>

namespace xmlt::kernels {

enum class OutputMath {
  kFp32,  // fp32 products (the default: the same model on every machine)
  kBf16,  // bfloat16 inputs, fp32 accumulation and results (CPUs with native bf16, and GPUs)
  kTf32,  // TF32 inputs (10-bit mantissa), fp32 accumulation and results (GPUs only)
};

// "fp32", "bf16" or "tf32", as --math spells it.
inline const char* OutputMathName(OutputMath math) {
  return math == OutputMath::kBf16 ? "bf16" : math == OutputMath::kTf32 ? "tf32" : "fp32";
}

}  // namespace xmlt::kernels
