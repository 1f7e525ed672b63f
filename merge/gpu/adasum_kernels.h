// The Adasum merge's arithmetic on the GPUs (device_adasum.h), each kernel behind a host function
// that launches it on a stream of the current GPU: the deltas from the round's start, the partial
// dots of two operands in double, the coefficients from a group's dots (merge::AdasumCoefficient,
// the host merge's own), the combination, and the momentum rule's update of w and w_p.
#pragma once

#include <cuda_runtime.h>

#include <cstddef>

#include "merge/gpu/device_collective.h"

namespace xmlt::merge::gpu {

// The doubles of scratch that LaunchAdasumDots needs: 3 per block.
constexpr size_t kAdasumDotsScratch = 3 * 1024;

// params[j] -= start[j], j < n: the round's start w, or Nesterov's look-ahead w + gamma (w - w_p).
void LaunchAdasumDeltas(cudaStream_t stream, float* params, const float* current, const float* previous, size_t n,
                        const DeviceMomentum& momentum);
// dots[0, 1, 2] = a.b, |a|^2, |b|^2 over j < n, in double, through `partial` (kAdasumDotsScratch).
void LaunchAdasumDots(cudaStream_t stream, const float* a, const float* b, size_t n, double* partial, double* dots);
// coefficients[2t], [2t + 1]: those of a and b in tensor t, from `members` rows of dots (row k:
// 3 doubles per tensor), summed in row order: every member of a group sums the same rows in the
// same order and gets the same bits.
void LaunchAdasumCoefficients(cudaStream_t stream, const double* rows, size_t members, size_t tensors,
                              float* coefficients);
// out[j] = coefficients[0] a[j] + coefficients[1] b[j], j < n; out may be a or b.
void LaunchAdasumCombine(cudaStream_t stream, float* out, const float* a, const float* b, size_t n,
                         const float* coefficients);
// Adasum's result D (`sum`) gives the next start (`start`, may be sum), and w and w_p advance by
// the momentum rule (merge/adasum_merger.cc's, value for value).
void LaunchAdasumUpdate(cudaStream_t stream, const float* sum, float* start, float* current, float* previous, size_t n,
                        const DeviceMomentum& momentum);

}  // namespace xmlt::merge::gpu
