// The global model's host and GPU copies; see global_model.h.
#include "merge/global_model.h"

#include <cmath>
#include <exception>

namespace xmlt::merge {

bool GlobalModel::CurrentFinite() const {
  if (host_stale_) return on_gpus_->CurrentFinite();
  bool finite = true;
  for (const float v : current_) finite &= std::isfinite(v);
  return finite;
}

bool GlobalModel::TakeBackFromGpus() {
  bool fetched = true;
  if (host_stale_) {
    std::vector<float> current(current_.size()), previous(previous_.size());
    try {
      on_gpus_->Fetch(current.data(), previous.data());
      current_.swap(current);
      previous_.swap(previous);
    } catch (const std::exception&) {
      fetched = false;
    }
  }
  HostIsTheModel();
  return fetched;
}

}  // namespace xmlt::merge
