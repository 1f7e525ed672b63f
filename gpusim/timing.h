// A virtual clock for the simulated GPUs, so that a schedule of copies and kernels can be given a
// projected time on a stated machine, not measured on this one. Each GPU has a port per direction
// to its peers and one to host memory, and its memory (HBM). A copy occupies the sender's outgoing
// and the receiver's incoming port for bytes / bandwidth and completes one latency later; a kernel
// occupies its GPU's memory for the bytes it touches / HBM bandwidth, which its launcher states
// (timing::KernelBytes) since the simulator cannot know them; a kernel without that hint costs
// nothing and is counted (UnhintedKernels). An operation starts when its stream's previous one
// has finished, the events it waits on have been reached, the host had issued it (the host's
// clock advances when it synchronizes); it then uses its resources' free time, in the gaps that
// the operations timed before it left, until it has had enough: concurrent copies on one port
// take as long in total as sharing it would, though the one the simulator runs first (it runs
// work stream by stream, when waited for) gets the port first.
// Ignored: kernel launch and API overheads, SM contention, the HBM that copies use, NVSwitch and
// PCIe switch topology (every GPU reaches every other at its port's rate).
#pragma once

#include <cstdint>
#include <string>

namespace gpusim {

// Bandwidths in GB/s (1e9 bytes per second) per direction per GPU, latencies in microseconds.
struct LinkModel {
  std::string name;
  double peer_gbps = 0, peer_latency_us = 0;  // GPU to GPU
  double host_gbps = 0, host_latency_us = 0;  // GPU to and from host memory; staged peer copies
  double hbm_gbps = 0;                        // kernels, memsets and copies within one GPU
  bool peer_over_host_link = false;           // peer copies use the same ports as host copies (PCIe)
};

// "pcie4" or "nvlink4" (see timing.cc for the figures and their sources); std::invalid_argument
// otherwise.
LinkModel LinkModelNamed(const std::string& name);
// XMLT_SIM_LINK (default pcie4), read once, unless SetLinkModel chose another.
LinkModel CurrentLinkModel();
// Waits for every GPU's work, then uses `model` from a zero clock.
void SetLinkModel(const LinkModel& model);

// Seconds from the last reset to the end of the latest operation that has run since.
double ProjectedTime();
// Waits for every GPU's work (which the old clock times), then sets every clock back to zero.
void ResetProjection();

// Seconds each resource of a GPU was busy since the last reset.
struct BusyTime {
  double send = 0, receive = 0;  // its outgoing and incoming ports (peer and host together)
  double memory = 0;             // its HBM
};
BusyTime BusyTimeOf(int gpu);
// Kernels run without a byte count since the last reset.
uint64_t UnhintedKernels();

namespace timing {
// The bytes of device memory the next kernel launched on this host thread reads and writes.
void KernelBytes(uint64_t bytes);
}  // namespace timing

namespace detail {

// The running operation (its clock, EnterOp, After) and the host's clock are in operation_clock.h.

// A copy of `bytes` from `src_gpu` to `dst_gpu` (-1: host memory), by the running operation.
void ChargeCopy(int src_gpu, int dst_gpu, uint64_t bytes);
// `bytes` of GPU `gpu`'s memory read or written by the running operation.
void ChargeMemory(int gpu, uint64_t bytes);
// SubmitKernel: takes the hint of this thread's next kernel (UINT64_MAX: none).
uint64_t TakeKernelBytes();
void CountUnhintedKernel();

}  // namespace detail
}  // namespace gpusim
