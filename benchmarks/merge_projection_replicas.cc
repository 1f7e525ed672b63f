// The waits the merge projection's schedules share; see merge_projection_replicas.h.
#include "benchmarks/merge_projection_replicas.h"

namespace merge_projection {

void SynchronizeAll(int gpus) {
  for (int g = 0; g < gpus; ++g) {
    DeviceGuard guard(g);
    XMLT_CUDA_CHECK(cudaDeviceSynchronize());
  }
}

void RunInOrder(const std::vector<Event*>& events) {
  for (Event* e : events) e->Synchronize();
}

std::vector<Event> EventsOn(int gpu, size_t count) {
  DeviceGuard guard(gpu);
  std::vector<Event> events(count);
  return events;
}

}  // namespace merge_projection
