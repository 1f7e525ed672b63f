// The global model w and its previous value w_p of a merge on GPUs, kept where the merge updates
// them: each GPU holds the parts of w and w_p it owns (the ring's chunks, NCCL's shard and tail, or
// the whole model), at offsets of its own. One type knows which GPU holds which part, so the host
// reaches w and w_p only through Upload and Download (at the start of a run, after a resume or a
// rollback; for evaluation and checkpoints), and the finite check counts on the GPUs, only a count
// reaching the host.
#pragma once

#include <cuda_runtime.h>

#include <cstddef>
#include <string>
#include <vector>

#include "kernels/cuda/device_buffer.h"

namespace xmlt::merge::gpu {

class DeviceGlobalModel {
 public:
  // Values [host, host + size) of the model at [device, device + size) of a GPU's w and w_p.
  // Download reads a part from the GPU whose copy says `download` (one for each value).
  struct Part {
    size_t host = 0, device = 0, size = 0;
    bool download = true;
  };
  // [offset, offset + size) of a GPU's w.
  struct Span {
    size_t offset = 0, size = 0;
  };
  // What GPU `ordinal` holds: `size` floats each of w and w_p, the parts they hold, and the spans of
  // w its finite check counts (none: the check leaves the GPU alone).
  struct Layout {
    int ordinal = 0;
    size_t size = 0;
    std::vector<Part> parts;
    std::vector<Span> checked;
  };

  DeviceGlobalModel() = default;
  // The GPUs in the merge's order; makes each GPU's counter of non-finite values. w and w_p are
  // allocated by Allocate or the first Upload. `owner` (the merge) and `noun` (what it calls w and
  // w_p) name them in the errors of a model used before it was set, as the user sees them.
  DeviceGlobalModel(std::string owner, std::vector<Layout> gpus, std::string noun = "global model");

  // w and w_p on every GPU, if not there yet.
  void Allocate();
  // w and w_p (host memory, the whole model each) onto the GPUs, each GPU taking its parts; then
  // set() holds.
  void Upload(const float* current, const float* previous);
  // Each value of w and w_p back from the GPU that downloads it. CheckSet first.
  void Download(float* current, float* previous) const;
  // Whether Upload was called.
  bool set() const { return set_; }
  // std::logic_error "<owner>: no <noun> was set" unless set().
  void CheckSet() const;
  // std::logic_error "<owner>: <step> needs SetGlobalModel first" unless set(): for a merge that
  // reads w and w_p.
  void CheckSetBefore(const std::string& step) const;

  // GPU g's w and w_p (g: index in the merge's order), where the merge's kernels update them.
  float* current(size_t g) { return gpus_[g].current.data(); }
  float* previous(size_t g) { return gpus_[g].previous.data(); }

  // The non-finite values among the checked spans of every GPU's w, counted on `streams[g]` (one
  // per GPU, in order); returns when every count has reached the host. CheckSet first.
  unsigned long long CountNonFinite(const std::vector<cudaStream_t>& streams);

 private:
  struct Gpu {
    Layout layout;
    kernels::cuda::DeviceBuffer<float> current, previous;
    kernels::cuda::DeviceBuffer<unsigned long long> non_finite;
    kernels::cuda::PinnedBuffer<unsigned long long> non_finite_host;
  };
  std::string owner_, noun_;
  std::vector<Gpu> gpus_;
  bool set_ = false;
};

}  // namespace xmlt::merge::gpu
