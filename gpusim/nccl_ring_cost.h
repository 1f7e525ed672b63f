// NCCL's ring as the simulator charges a collective for it: the bytes each GPU sends its
// neighbour (traffic.h) and the steps on the virtual clock (timing.h). See nccl_ring_cost.cc.
#pragma once

#include <vector>

#include "gpusim/nccl_call.h"

namespace gpusim::nccl {

// The ring's steps on the virtual clock from `ready`, when every rank's inputs are; returns the end
// of the last. `calls` are one collective's, by rank.
double ChargeRing(const std::vector<Call>& calls, double ready);

// Counts the bytes each rank sends to the next as NCCL's ring moves them.
void CountRingTraffic(const std::vector<Call>& calls);

}  // namespace gpusim::nccl
