// cuBLAS on the simulated GPUs: GemmEx and Sscal run in stream order through the host's CBLAS,
// with their operands checked against the device allocations (a card would read whatever lies
// past a too-short operand, or fault). TF32 and BF16 compute round the inputs to 10 and 7 bits of
// mantissa first, as the tensor cores do; the products accumulate in fp32.
#include <cblas.h>
#include <cublas_v2.h>

#include <cmath>
#include <cstdint>
#include <cstring>
#include <memory>
#include <string>
#include <vector>

#include "gpusim/device_memory.h"
#include "gpusim/devices.h"
#include "gpusim/faults.h"
#include "gpusim/streams.h"

struct cublasContext {
  int device = 0;
  cudaStream_t stream = nullptr;
  void* workspace = nullptr;
  size_t workspace_bytes = 0;
};

using namespace gpusim;
using namespace gpusim::detail;

namespace {

// Rounds to nearest even, keeping `mantissa_bits` of fp32's 23 (infinities and NaN pass).
float RoundMantissa(float x, int mantissa_bits) {
  if (!std::isfinite(x)) return x;
  uint32_t bits;
  std::memcpy(&bits, &x, sizeof bits);
  const int drop = 23 - mantissa_bits;
  const uint32_t half = 1u << (drop - 1), lsb = (bits >> drop) & 1u;
  bits = (bits + half - 1 + lsb) & ~((1u << drop) - 1);
  std::memcpy(&x, &bits, sizeof bits);
  return x;
}

int MantissaBits(cublasComputeType_t compute) {
  switch (compute) {
    case CUBLAS_COMPUTE_32F_FAST_TF32: return 10;
    case CUBLAS_COMPUTE_32F_FAST_16BF: return 7;
    case CUBLAS_COMPUTE_32F_FAST_16F: return 10;  // fp16's mantissa; its range is not emulated
    default: return 23;
  }
}

// The elements a column-major rows x cols operand with leading dimension ld spans.
size_t Extent(int rows, int cols, int ld) {
  return rows == 0 || cols == 0 ? 0 : size_t(ld) * size_t(cols - 1) + size_t(rows);
}

// Why an operand cannot be read on the handle's GPU, or "".
std::string CheckOperand(const char* name, const void* p, size_t elements, int device) {
  if (elements == 0) return {};
  if (Contains(p, elements * sizeof(float), Space::kDevice, device)) return {};
  return std::string("operand ") + name + " of " + std::to_string(elements) + " floats at " + Describe(p) +
         " is not inside one device allocation of GPU " + std::to_string(device);
}

bool Live(cublasHandle_t handle) { return handle != nullptr; }

// Counts the launch and enqueues the library kernel; a fault (injected, or an operand outside device
// memory) loses the context when the work runs, as the kernel's fault would.
cublasStatus_t Submit(cublasHandle_t handle, const char* name, std::string misuse, std::function<void()> work) {
  if (StickyError(handle->device) != cudaSuccess) return CUBLAS_STATUS_EXECUTION_FAILED;
  CUstream_st* stream = handle->stream == nullptr ? LegacyStream(handle->device) : ResolveStream(handle->stream);
  if (stream == nullptr) return CUBLAS_STATUS_EXECUTION_FAILED;
  const cudaError_t injected = CountLaunch(handle->device);
  const int gpu = handle->device;
  Enqueue(stream, [=, misuse = std::move(misuse), work = std::move(work)] {
    if (injected != cudaSuccess) return LoseContext(gpu, injected, std::string("injected fault in ") + name);
    if (!misuse.empty()) return LoseContext(gpu, cudaErrorIllegalAddress, std::string(name) + ": " + misuse);
    work();
  });
  return CUBLAS_STATUS_SUCCESS;
}

}  // namespace

cublasStatus_t cublasCreate(cublasHandle_t* handle) {
  int device = 0;
  if (cudaGetDevice(&device) != cudaSuccess || ContextError(device) != cudaSuccess) return CUBLAS_STATUS_NOT_INITIALIZED;
  *handle = new cublasContext{device, nullptr, nullptr, 0};
  return CUBLAS_STATUS_SUCCESS;
}

cublasStatus_t cublasDestroy(cublasHandle_t handle) {
  if (!Live(handle)) return CUBLAS_STATUS_NOT_INITIALIZED;
  // Its work must finish before its workspace may be reused.
  CUstream_st* stream = handle->stream == nullptr ? LegacyStream(handle->device) : ResolveStream(handle->stream);
  if (stream != nullptr) Flush(stream);
  delete handle;
  return CUBLAS_STATUS_SUCCESS;
}

cublasStatus_t cublasSetStream(cublasHandle_t handle, cudaStream_t stream) {
  if (!Live(handle)) return CUBLAS_STATUS_NOT_INITIALIZED;
  if (stream != nullptr && ResolveStream(stream) == nullptr) return CUBLAS_STATUS_INVALID_VALUE;
  handle->stream = stream;
  // As cuBLAS does: a new stream puts the handle back on its own workspace pool.
  handle->workspace = nullptr;
  handle->workspace_bytes = 0;
  return CUBLAS_STATUS_SUCCESS;
}

cublasStatus_t cublasSetWorkspace(cublasHandle_t handle, void* workspace, size_t bytes) {
  if (!Live(handle)) return CUBLAS_STATUS_NOT_INITIALIZED;
  if (bytes > 0 && (reinterpret_cast<uintptr_t>(workspace) % 256 != 0 ||
                    !Contains(workspace, bytes, Space::kDevice, handle->device)))
    return CUBLAS_STATUS_INVALID_VALUE;
  handle->workspace = workspace;
  handle->workspace_bytes = bytes;
  return CUBLAS_STATUS_SUCCESS;
}

const char* cublasGetStatusString(cublasStatus_t status) {
  switch (status) {
    case CUBLAS_STATUS_SUCCESS: return "the operation completed successfully";
    case CUBLAS_STATUS_NOT_INITIALIZED: return "the library was not initialized";
    case CUBLAS_STATUS_ALLOC_FAILED: return "the resource allocation failed";
    case CUBLAS_STATUS_INVALID_VALUE: return "an invalid numeric value was used as an argument";
    case CUBLAS_STATUS_ARCH_MISMATCH: return "an absent device architectural feature is required";
    case CUBLAS_STATUS_MAPPING_ERROR: return "an access to GPU memory space failed";
    case CUBLAS_STATUS_EXECUTION_FAILED: return "the GPU program failed to execute";
    case CUBLAS_STATUS_INTERNAL_ERROR: return "an internal operation failed";
    case CUBLAS_STATUS_NOT_SUPPORTED: return "the functionality requested is not supported";
  }
  return "unknown error";
}

cublasStatus_t cublasGemmEx(cublasHandle_t handle, cublasOperation_t transa, cublasOperation_t transb, int m, int n,
                            int k, const void* alpha, const void* A, cudaDataType Atype, int lda, const void* B,
                            cudaDataType Btype, int ldb, const void* beta, void* C, cudaDataType Ctype, int ldc,
                            cublasComputeType_t compute, cublasGemmAlgo_t algo) {
  if (!Live(handle)) return CUBLAS_STATUS_NOT_INITIALIZED;
  if (Atype != CUDA_R_32F || Btype != CUDA_R_32F || Ctype != CUDA_R_32F) return CUBLAS_STATUS_NOT_SUPPORTED;
  if (compute != CUBLAS_COMPUTE_32F && compute != CUBLAS_COMPUTE_32F_PEDANTIC && compute != CUBLAS_COMPUTE_32F_FAST_TF32 &&
      compute != CUBLAS_COMPUTE_32F_FAST_16BF && compute != CUBLAS_COMPUTE_32F_FAST_16F)
    return CUBLAS_STATUS_NOT_SUPPORTED;
  if (algo != CUBLAS_GEMM_DEFAULT) return CUBLAS_STATUS_NOT_SUPPORTED;
  const auto valid_op = [](cublasOperation_t op) { return op == CUBLAS_OP_N || op == CUBLAS_OP_T; };
  if (!valid_op(transa) || !valid_op(transb)) return CUBLAS_STATUS_INVALID_VALUE;
  // op(A) is m x k, op(B) k x n, C m x n, all column-major.
  const int a_rows = transa == CUBLAS_OP_N ? m : k, a_cols = transa == CUBLAS_OP_N ? k : m;
  const int b_rows = transb == CUBLAS_OP_N ? k : n, b_cols = transb == CUBLAS_OP_N ? n : k;
  if (m < 0 || n < 0 || k < 0 || lda < std::max(1, a_rows) || ldb < std::max(1, b_rows) || ldc < std::max(1, m))
    return CUBLAS_STATUS_INVALID_VALUE;
  if (m == 0 || n == 0) return CUBLAS_STATUS_SUCCESS;
  if (alpha == nullptr || beta == nullptr) return CUBLAS_STATUS_INVALID_VALUE;
  const float a_scale = *static_cast<const float*>(alpha), b_scale = *static_cast<const float*>(beta);  // host pointer mode
  const int gpu = handle->device;
  std::string misuse = CheckOperand("A", A, k == 0 ? 0 : Extent(a_rows, a_cols, lda), gpu);
  if (misuse.empty()) misuse = CheckOperand("B", B, k == 0 ? 0 : Extent(b_rows, b_cols, ldb), gpu);
  if (misuse.empty()) misuse = CheckOperand("C", C, Extent(m, n, ldc), gpu);
  const int bits = MantissaBits(compute);
  const float* a = static_cast<const float*>(A);
  const float* b = static_cast<const float*>(B);
  float* c = static_cast<float*>(C);
  return Submit(handle, "cublasGemmEx", std::move(misuse), [=] {
    std::vector<float> a_rounded, b_rounded;
    const float* a_in = a;
    const float* b_in = b;
    if (bits < 23 && k > 0) {
      a_rounded.assign(a, a + Extent(a_rows, a_cols, lda));
      b_rounded.assign(b, b + Extent(b_rows, b_cols, ldb));
      for (float& x : a_rounded) x = RoundMantissa(x, bits);
      for (float& x : b_rounded) x = RoundMantissa(x, bits);
      a_in = a_rounded.data();
      b_in = b_rounded.data();
    }
    cblas_sgemm(CblasColMajor, transa == CUBLAS_OP_N ? CblasNoTrans : CblasTrans,
                transb == CUBLAS_OP_N ? CblasNoTrans : CblasTrans, m, n, k, a_scale, a_in, lda, b_in, ldb, b_scale, c,
                ldc);
    MarkDeviceWritten(c, Extent(m, n, ldc) * sizeof(float));
  });
}

cublasStatus_t cublasSscal(cublasHandle_t handle, int n, const float* alpha, float* x, int incx) {
  if (!Live(handle)) return CUBLAS_STATUS_NOT_INITIALIZED;
  if (n <= 0 || incx <= 0) return CUBLAS_STATUS_SUCCESS;
  const float scale = *alpha;
  std::string misuse = CheckOperand("x", x, size_t(n - 1) * size_t(incx) + 1, handle->device);
  return Submit(handle, "cublasSscal", std::move(misuse), [=] {
    cblas_sscal(n, scale, x, incx);
    MarkDeviceWritten(x, (size_t(n - 1) * size_t(incx) + 1) * sizeof(float));
  });
}
