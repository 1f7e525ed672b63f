// The arithmetic of the output layer's three products in the training step (--math). The master
// weights, the momentum, the softmax and every other layer stay in fp32 either way.
#pragma once

#include <string>

namespace xmlt::kernels {

enum class OutputMath {
  kFp32,  // fp32 products (the default: the same model on every machine)
  kBf16,  // bfloat16 inputs, fp32 accumulation and results (CPUs with native bf16 only)
};

// "fp32" or "bf16", as --math spells it.
inline const char* OutputMathName(OutputMath math) { return math == OutputMath::kBf16 ? "bf16" : "fp32"; }

}  // namespace xmlt::kernels
