// Chooses a collective by its name ("ring", "tree", "naive"), as options and the CLI spell it.
#include <stdexcept>

#include "merge/collective.h"

namespace xmlt::merge {

std::unique_ptr<Collective> MakeCollective(const std::string& name, size_t devices) {
  if (name == "ring") return MakeCpuRingCollective(devices);
  if (name == "tree") return MakeCpuTreeCollective(devices);
  if (name == "naive") return MakeNaiveCollective();
  throw std::invalid_argument("unknown collective '" + name + "' (expected ring, tree or naive)");
}

}  // namespace xmlt::merge
