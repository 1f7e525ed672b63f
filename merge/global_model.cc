// The global model's host and GPU copies; see global_model.h.
#include <cmath>

#include "merge/global_model.h"

namespace xmlt::merge {

bool GlobalModel::CurrentFinite() const {
  if (host_stale) return on_gpus->CurrentFinite();
  bool finite = true;
  for (const float v : current) finite &= std::isfinite(v);
  return finite;
}

}  // namespace xmlt::merge
