// The global model a merge combines the replicas into (w), its previous value (w_p) and how the
// global momentum between them acts; a merge that runs on the GPUs keeps w and w_p there.
#pragma once

#include <cstddef>
#include <memory>
#include <utility>
#include <vector>

namespace xmlt::merge {

// How the global momentum acts (DANA's look-ahead reasoning applied to model averaging):
//  - kHeavy: replicas start each mega-batch from w; w' = combine(replicas) + gamma (w - w_p).
//  - kNesterov: replicas start from the estimated future position w + gamma (w - w_p), so their
//    gradients are taken where the model is heading; w' = combine(replicas), whose starting point
//    already carries the momentum step. The global model w itself (what is evaluated and saved) is
//    never the look-ahead point.
enum class MomentumMode { kHeavy, kNesterov };

// w and w_p as a merge on the GPUs keeps them (merge/gpu/).
class GlobalModelOnGpus {
 public:
  virtual ~GlobalModelOnGpus() = default;
  virtual void Fetch(float* current, float* previous) = 0;  // both into host memory
  virtual bool CurrentFinite() = 0;                         // counted on the GPUs
};

// The global model of model-averaging SGD and its previous value (for the momentum term), kept
// where they were last written, as XGBoost's HostDeviceVector keeps its data: on the host, or,
// after a merge on the GPUs, there (the host vectors stale). The accessors keep that record, so no
// caller has to: a read fetches w and w_p back first when the GPUs' copy is newer, and a write
// makes the host vectors the model, which the next merge on the GPUs uploads.
class GlobalModel {
 public:
  GlobalModel() = default;
  // w and w_p, on the host (a run starts with w_p = w, so that its first momentum term is 0).
  GlobalModel(std::vector<float> current, std::vector<float> previous)
      : current_(std::move(current)), previous_(std::move(previous)) {}

  // The sizes of w and w_p, the same wherever they are newest: sizing a merge fetches nothing.
  size_t size() const { return current_.size(); }
  size_t previous_size() const { return previous_.size(); }

  // w and w_p to read on the host: fetched first if a merge on the GPUs left them newer there, so
  // a reader never sees a stale copy; the GPUs' copy stays valid too.
  const std::vector<float>& current() const {
    SyncToHost();
    return current_;
  }
  const std::vector<float>& previous() const {
    SyncToHost();
    return previous_;
  }

  // w and w_p to write on the host (a host merge, a resume): fetched first, as for a read, then the
  // host vectors are the model and the GPUs' copy is released, so the next merge there uploads
  // what is written here.
  std::vector<float>& MutableCurrent() { return HostWritable(current_); }
  std::vector<float>& MutablePrevious() { return HostWritable(previous_); }

  // Sets w and w_p from the host (a rollback to a trusted state): the GPUs' copy, overwritten
  // anyway, is released unread.
  void Assign(const std::vector<float>& current, const std::vector<float>& previous) {
    HostIsTheModel();
    current_ = current;
    previous_ = previous;
  }

  // Exchanges w's host vector with `other`, without a copy and without changing where w is newest:
  // lends w to a reader that needs it in a vector of its own (an evaluation's model), which a
  // second call takes back. The borrower must not write it.
  void SwapCurrent(std::vector<float>* other) {
    SyncToHost();
    current_.swap(*other);
  }

  // The GPUs' copy is lost with a GPU that held part of it: the host's copy, made after the last
  // mega-batch, is the model from here on, unread from the GPUs.
  void FallBackToHostCopy() { HostIsTheModel(); }

  // Ends the hold of the merge whose GPUs' copy is the model (its merger is being replaced, its
  // buffers freed): fetches w and w_p if newer there, into scratch first so that a fetch a lost GPU
  // cuts leaves the host copy whole. False if that fetch failed: the host's older copy stands in.
  // Either way the host vectors are the model afterwards.
  bool TakeBackFromGpus();

  // A merge on the GPUs left w and w_p newer in `holder`: the host vectors stay stale until read.
  void KeptOnGpus(std::shared_ptr<GlobalModelOnGpus> holder) {
    on_gpus_ = std::move(holder);
    host_stale_ = true;
  }
  // The merge on the GPUs whose copy of w and w_p is still valid (null: none), which can merge on
  // without uploading them first.
  const GlobalModelOnGpus* gpu_holder() const { return on_gpus_.get(); }
  // Whether that copy is newer than the host's: a merge that works on the host only refuses then.
  bool newer_on_gpus() const { return host_stale_; }

  // Fetches w and w_p now if they are newer on the GPUs. A read does so anyway; this picks the
  // moment, e.g. where every rank must fetch together (across ranks the fetch is a collective).
  void SyncToHost() const {
    if (!host_stale_) return;
    on_gpus_->Fetch(current_.data(), previous_.data());
    host_stale_ = false;
  }

  // Every value of w finite, checked where w is newest.
  bool CurrentFinite() const;

 private:
  // The host vectors are the model, the GPUs' copy released (and freed once its merger is gone).
  void HostIsTheModel() {
    on_gpus_.reset();
    host_stale_ = false;
  }
  std::vector<float>& HostWritable(std::vector<float>& host) {
    SyncToHost();
    HostIsTheModel();
    return host;
  }

  // mutable: a read that fetches changes where w and w_p are newest, not what they are.
  mutable std::vector<float> current_;                    // w
  mutable std::vector<float> previous_;                   // w_p
  std::shared_ptr<GlobalModelOnGpus> on_gpus_ = nullptr;  // set by a merge on the GPUs
  mutable bool host_stale_ = false;                       // on_gpus_ holds a newer w and w_p
};

}  // namespace xmlt::merge
