// What the device line says when the CUDA runtime finds no GPU. On a machine without an NVIDIA GPU
// the runtime's own words are misleading: with no driver installed it says "CUDA driver version is
// insufficient for CUDA runtime version", as if a driver were there and too old. Without the NVIDIA
// driver (its /proc/driver/nvidia or /dev/nvidiactl), or with the runtime's "no device", the line
// says "no GPU found"; a driver that is there keeps the runtime's message, which then is the cause.
#pragma once

#include <string>

namespace xmlt::engine {

// Whether the NVIDIA kernel driver is loaded on this machine (or passed into this container).
bool NvidiaDriverPresent();

// The words for a failed device count: `no_device` when the runtime said there is none,
// `runtime_message` its cudaGetErrorString otherwise.
std::string NoGpuText(bool no_device, const std::string& runtime_message, bool driver_present);

}  // namespace xmlt::engine
