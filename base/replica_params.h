// Where a model replica's parameters are: a device hands it out (engine/device.h) and the merges
// take one per replica (merge/replica_set.h, the device collectives of merge/gpu/), so it lives
// below both.
#pragma once

#include <cstdint>

namespace xmlt::base {

// `params` points into the memory of GPU `gpu`, or into host memory when `gpu` is -1 (so a host
// replica is just {params}). A host replica that keeps its weights in bf16 (--weights bf16) has no
// fp32 parameters: `bf16` points to them instead and `params` is null; the host merges read it
// through merge/replica_blocks.h (the copy merge, which copies fp32 values, refuses it).
struct ReplicaParams {
  float* params = nullptr;
  int gpu = -1;
  uint16_t* bf16 = nullptr;

  bool on_gpu() const { return gpu >= 0; }
  bool in_bf16() const { return bf16 != nullptr; }
  bool operator==(const ReplicaParams& other) const {
    return gpu == other.gpu && params == other.params && bf16 == other.bf16;
  }
  bool operator!=(const ReplicaParams& other) const { return !(*this == other); }
};

}  // namespace xmlt::base
