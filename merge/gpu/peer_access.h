// Peer access between two GPUs, for the merges that copy between them: with it a peer copy goes
// over the GPUs' link; without it the runtime stages the copy through host memory.
#pragma once

namespace xmlt::merge::gpu {

// Lets `device` read and write `peer`'s memory where the GPUs allow it (enabled already, by an
// earlier merge or pair: fine); returns whether they do.
bool EnablePeerAccess(int device, int peer);

}  // namespace xmlt::merge::gpu
