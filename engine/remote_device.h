// A device of another rank (MPI process) of the run. Every rank plans every device's batches, but
// only the owner trains them; here the device is a mirror of its replica and optimizer state,
// filled by the ranks' exchanges where a merge or a checkpoint needs them.
#pragma once

#include <memory>
#include <vector>

#include "engine/device.h"

namespace xmlt::engine {

// Training or evaluating on it is a logic error (its owner does that); the mirror holds what the
// owner last shared, or nothing: its memory is taken only when a merge or a checkpoint asks for it
// and given back with ReleaseMirror (hierarchical merges never read it). `bf16_weights`: the owner
// keeps its weights in bf16 (--weights bf16), and so does the mirror: HostBf16Params, never
// HostParams, as for a local replica of the run.
std::unique_ptr<Device> MakeRemoteDevice(const DeviceSpec& spec, const kernels::Model<float>& initial,
                                         bool bf16_weights = false);

}  // namespace xmlt::engine
