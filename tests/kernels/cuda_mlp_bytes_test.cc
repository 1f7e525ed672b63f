// CudaMlp::PlannedBytes, which the memory plan reads, against the card: at the Amazon-670K shape a
// replica takes from the GPU's free memory (cudaMemGetInfo before and after) at least what it
// plans, and at most that plus a 2 MiB page per allocation and a bounded overhead of the runtime's
// own (the cuBLAS handle, kernels loaded on first launch).
#include <gtest/gtest.h>

#include <cuda_runtime.h>

#include <algorithm>
#include <cstdio>

#include "kernels/cuda/cuda_check.h"
#include "kernels/cuda/cuda_mlp.h"
#include "tests/kernels/cuda_test_gate.h"

namespace xmlt::kernels::cuda {
namespace {

uint64_t FreeBytes() {
  XMLT_CUDA_CHECK(cudaDeviceSynchronize());
  size_t free_bytes = 0, total_bytes = 0;
  XMLT_CUDA_CHECK(cudaMemGetInfo(&free_bytes, &total_bytes));
  return free_bytes;
}

TEST(CudaMlpBytes, AReplicaTakesWhatItPlansOnTheCard) {
  XMLT_SKIP_WITHOUT_GPU();
  const ModelShape amazon{135909, {128}, 670091};
  const uint32_t rows = 256;
  const uint64_t feature_nnz = uint64_t(rows) * 400, label_nnz = uint64_t(rows) * 20;
  XMLT_CUDA_CHECK(cudaSetDevice(0));
  XMLT_CUDA_CHECK(cudaFree(nullptr));  // the context first: the plan does not count it
  const CudaMlpBytes planned = CudaMlp::PlannedBytes(0, amazon, rows, feature_nnz, label_nnz);
  const uint64_t before = FreeBytes();
  {
    CudaMlp replica(0, amazon, rows, feature_nnz, label_nnz, Math::kFp32);
    const uint64_t taken = before - FreeBytes();
    EXPECT_TRUE(replica.AllocatedBytes() == planned);
    const uint64_t rounding = planned.allocations * (uint64_t{2} << 20);
    const uint64_t runtime_overhead = uint64_t{64} << 20;
    std::printf("CudaMlp at 135909-128-670091, %u rows: planned %llu MiB on the device (%llu allocations), "
                "cudaMemGetInfo says %llu MiB taken\n",
                rows, (unsigned long long)(planned.device_total() >> 20), (unsigned long long)planned.allocations,
                (unsigned long long)(taken >> 20));
    EXPECT_GE(taken, planned.device_total());
    EXPECT_LE(taken, planned.device_total() + rounding + runtime_overhead);
    EXPECT_EQ(planned.velocity, planned.params) << "the velocity is allocated even for plain SGD";
    EXPECT_GE(planned.blas, uint64_t{4} << 20);
  }
  // Everything comes back when the replica goes (less what the runtime keeps for itself).
  EXPECT_LE(before - std::min(before, FreeBytes()), uint64_t{64} << 20);
}

}  // namespace
}  // namespace xmlt::kernels::cuda
