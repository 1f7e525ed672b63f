// The elastic force merge (EASGD, CROSSBOW's synchronous model averaging) on replicas in GPU
// memory: merge/merger.h's MakeElasticForceMerger, on the GPUs. Each GPU pulls its own replicas
// toward the center x (c_j = a (z_j - x), z_j <- z_j - c_j) and sums their pulls, one kernel per
// replica; the GPUs' sums go around the ring (ring_all_reduce.h), so every GPU ends with
// sum_j c_j; then every GPU moves its copy of the center, x <- x + sum_j c_j + gamma (x - x_prev),
// the same arithmetic on the same values, so the copies stay equal. Each replica keeps its own
// state, so there is no common value to write back: the ring carries only the pulls.
#pragma once

#include <cstddef>
#include <memory>
#include <vector>

#include "merge/gpu/device_collective.h"

namespace xmlt::merge::gpu {

class DeviceElasticForce {
 public:
  // alpha: the pull strength a in (0, 1]; gamma: the center's momentum (EASGD uses 0). Holds on
  // each GPU the pulls' sum and the center x and x_prev (three model copies). Throws
  // std::invalid_argument on no replicas, a null pointer or alpha outside (0, 1].
  DeviceElasticForce(std::vector<base::ReplicaParams> replicas, size_t count, double alpha, double gamma);
  ~DeviceElasticForce();
  DeviceElasticForce(const DeviceElasticForce&) = delete;
  DeviceElasticForce& operator=(const DeviceElasticForce&) = delete;

  // One merge; returns when every replica and every copy of the center is updated. Needs
  // SetGlobalModel first (std::logic_error otherwise).
  void Merge();

  // x and x_prev (host memory, `count` floats each) onto every GPU; and back, from the first.
  void SetGlobalModel(const float* current, const float* previous);
  void GetGlobalModel(float* current, float* previous);
  bool GlobalModelFinite();

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace xmlt::merge::gpu
