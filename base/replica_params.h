// Where a model replica's parameters are: a device hands it out (engine/device.h) and the merges
// take one per replica (merge/replica_set.h, the device collectives of merge/gpu/), so it lives
// below both.
#pragma once

namespace xmlt::base {

// `params` points into the memory of GPU `gpu`, or into host memory when `gpu` is -1 (so a host
// replica is just {params}).
struct ReplicaParams {
  float* params = nullptr;
  int gpu = -1;

  bool on_gpu() const { return gpu >= 0; }
  bool operator==(const ReplicaParams& other) const { return gpu == other.gpu && params == other.params; }
  bool operator!=(const ReplicaParams& other) const { return !(*this == other); }
};

}  // namespace xmlt::base
