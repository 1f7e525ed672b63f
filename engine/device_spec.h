// The --devices syntax: "cpu:4" (four CPU workers), "cuda:0,cuda:1", "cuda:0x4" (four logical
// devices on GPU 0), and mixes such as "cuda:0,cpu:2".
#pragma once

#include <string>
#include <vector>

namespace xmlt::engine {

enum class DeviceKind { kCpu, kCuda };

struct DeviceSpec {
  DeviceKind kind = DeviceKind::kCpu;
  int ordinal = 0;  // CPU worker index, or GPU index
  int logical = 0;  // index among the logical devices sharing one GPU (cuda:0x4), else 0
  std::string id = "cpu:0";  // "cpu:1", "cuda:0", "cuda:0.2" (logical device 2 of GPU 0)
};

// Largest count in one item ("cpu:N", "cuda:GxN"); GPU indices go up to kMaxDeviceCount - 1.
inline constexpr int kMaxDeviceCount = 256;

// Devices in the order given; throws std::invalid_argument with the offending item for bad syntax,
// counts of 0 or above 256, or a GPU named twice.
//
// Items, separated by commas, with whitespace around items ignored:
//   "cpu:N"     N CPU workers, ids cpu:0 .. cpu:N-1 (N in 1..256)
//   "cpu"       one CPU worker, the same as "cpu:1" (id cpu:0)
//   "cuda:G"    GPU G (0..255), id cuda:G
//   "cuda:GxK"  K logical devices sharing GPU G (K in 1..256), ids cuda:G.0 .. cuda:G.K-1
//               ("cuda:Gx1" is the same as "cuda:G")
// "cpu" may appear once (write cpu:N for N workers) and each GPU once (write cuda:GxK to share it);
// a bare "cuda" is rejected so that a GPU index is never guessed.
std::vector<DeviceSpec> ParseDeviceList(const std::string& text);

// A run over `ranks` processes (MPI ranks), each with the devices `local`: every rank's devices,
// rank after rank, their ids marked with the owning rank ("cpu:1@r2"), and in `owner` the rank of
// each. One rank: `local` as it is.
std::vector<DeviceSpec> DevicesOfRanks(const std::vector<DeviceSpec>& local, int ranks, std::vector<int>* owner);
// Whether a sticky error in device a (of rank rank_a) loses device b (of rank_b) too: logical
// devices of one GPU in one process share its CUDA context. CPU workers share none.
bool SharesContext(const DeviceSpec& a, int rank_a, const DeviceSpec& b, int rank_b);
// The devices' ids joined by commas ("cpu:0,cpu:1"): a list as it is, whatever its spelling.
std::string DeviceListText(const std::vector<DeviceSpec>& devices);

}  // namespace xmlt::engine
