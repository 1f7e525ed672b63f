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
  std::string id;   // "cpu:1", "cuda:0", "cuda:0.2" (logical device 2 of GPU 0)
};

// Devices in the order given; throws std::invalid_argument with the offending item for bad syntax,
// counts of 0 or above 256, or a GPU named twice.
std::vector<DeviceSpec> ParseDeviceList(const std::string& text);

}  // namespace xmlt::engine
