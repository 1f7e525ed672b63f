// The element-wise kernels the device merges are built from, each behind a host function that
// launches it on a stream of the current GPU: weighted sums of replicas, the global momentum
// rule, additions, sums of squares in double and a count of non-finite values. Used by the ring
// (ring_all_reduce.h), NCCL (nccl_all_reduce.h) and the merges that combine replicas otherwise.
#pragma once

#include <cuda_runtime.h>

#include <cstddef>
#include <vector>

#include "merge/gpu/device_collective.h"

namespace xmlt::merge::gpu {

// Up to kTermsPerPass replicas and their weights, passed by value as kernel arguments (nothing to
// copy from the host before a merge).
constexpr int kTermsPerPass = 8;
struct WeightedTerms {
  const float* params[kTermsPerPass];
  float weight[kTermsPerPass];
  int count;
};

// acc[offset + j] = (accumulate ? acc[offset + j] : 0) + sum_t weight[t] * params[t][offset + j],
// j < n.
void LaunchWeightedSum(cudaStream_t stream, float* acc, size_t offset, size_t n, const WeightedTerms& terms,
                       bool accumulate);
// acc[offset + j] = sum over i in `chosen` of weights[i] * replicas[i].params[offset + j], j < n:
// the replicas of one GPU summed into its accumulator, kTermsPerPass at a time (the first pass
// writes, the others add).
void LaunchWeightedSumOfReplicas(cudaStream_t stream, float* acc, size_t offset, size_t n,
                                 const std::vector<base::ReplicaParams>& replicas,
                                 const std::vector<size_t>& chosen, const std::vector<double>& weights);
// acc[j] += received[j], j < n.
void LaunchAdd(cudaStream_t stream, float* acc, const float* received, size_t n);
// The global momentum rule on n values: `values` holds the weighted sum and becomes what the
// replicas take; current (w) and previous (w_p) advance.
void LaunchMomentum(cudaStream_t stream, float* values, float* current, float* previous, size_t n,
                    const DeviceMomentum& momentum);
// total[0] = sum of params[j]^2 over j < n, in double; `partial` holds kSquaresScratch doubles.
constexpr size_t kSquaresScratch = 4096;
void LaunchSquaredNorm(cudaStream_t stream, const float* params, size_t n, double* partial, double* total);
// *count += the number of non-finite values among values[0, n) (count is zeroed by the caller).
void LaunchCountNonFinite(cudaStream_t stream, const float* values, size_t n, unsigned long long* count);

}  // namespace xmlt::merge::gpu
