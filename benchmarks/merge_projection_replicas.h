// The merge projection's replicas (merge_projection.cc), one per simulated GPU, and the waits its
// schedules share.
#pragma once

#include <cuda_runtime.h>

#include <algorithm>
#include <cmath>
#include <cstddef>
#include <vector>

#include "kernels/cuda/device_buffer.h"
#include "merge/gpu/device_collective.h"

namespace merge_projection {

using namespace xmlt::kernels::cuda;
using namespace xmlt::merge::gpu;

// One replica per GPU, each starting at its ordinal + 1.
struct Replicas {
  size_t count = 0;
  std::vector<DeviceBuffer<float>> params;

  Replicas(int gpus, size_t floats) : count(floats) {
    for (int g = 0; g < gpus; ++g) {
      DeviceGuard guard(g);
      params.emplace_back(floats);
    }
  }
  int gpus() const { return int(params.size()); }
  void Fill() {
    std::vector<float> host(count);
    for (int g = 0; g < gpus(); ++g) {
      std::fill(host.begin(), host.end(), float(g + 1));
      DeviceGuard guard(g);
      XMLT_CUDA_CHECK(cudaMemcpy(params[g].data(), host.data(), count * sizeof(float), cudaMemcpyHostToDevice));
    }
  }
  std::vector<xmlt::base::ReplicaParams> View() {
    std::vector<xmlt::base::ReplicaParams> view;
    for (int g = 0; g < gpus(); ++g) view.push_back({params[g].data(), g});
    return view;
  }
  // Whether every value of every replica is `expected`, within `tolerance` of it.
  bool HoldEverywhere(float expected, float tolerance = 0) const {
    for (int g = 0; g < gpus(); ++g) {
      DeviceGuard guard(g);
      const std::vector<float> host = params[g].ToHost();
      if (std::any_of(host.begin(), host.end(), [&](float v) { return !(std::abs(v - expected) <= tolerance); }))
        return false;
    }
    return true;
  }
};

void SynchronizeAll(int gpus);

// Runs the issued work by waiting for `events` in this order. The simulator runs work when it is
// waited for, and gives a port to copies in the order it runs them (timing.h): waiting in the
// order the work would reach the ports on a card (chunk by chunk, wave by wave) keeps that order
// from favouring one stream's copies over another's, and the projection from depending on which
// stream the simulator happens to run first. Everything was issued before: the host's clock
// moving on with these waits changes no operation's time.
void RunInOrder(const std::vector<Event*>& events);

// Events in a flat table, created on their GPU.
std::vector<Event> EventsOn(int gpu, size_t count);

}  // namespace merge_projection
