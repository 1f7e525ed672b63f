// What the simulated GPUs copy, counted per GPU, so that tests can check how a collective moves
// data: bytes sent to and received from other GPUs (peer copies, direct or staged), and bytes
// between the GPU and host memory. Peer access between GPUs is allowed unless
// XMLT_SIM_PEER_ACCESS=0, in which case peer copies are staged through host memory (as the CUDA
// runtime does) and counted as host traffic too.
#pragma once

#include <cstdint>

namespace gpusim {

struct Traffic {
  uint64_t peer_sent = 0, peer_received = 0;  // to and from other GPUs
  uint64_t to_host = 0, from_host = 0;        // device-to-host and host-to-device
};

Traffic TrafficOf(int gpu);  // zeros for a GPU that does not exist
void ResetTraffic();
bool PeerAccessAllowed();  // XMLT_SIM_PEER_ACCESS, read once

namespace detail {
// Counts a copy of `bytes` from `src_gpu` to `dst_gpu` (-1: host memory).
void CountCopy(int src_gpu, int dst_gpu, uint64_t bytes);
}  // namespace detail

}  // namespace gpusim
