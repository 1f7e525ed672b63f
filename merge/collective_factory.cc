// Chooses a collective by its name ("ring", "tree", "naive"), as options and the CLI spell it.
#include <stdexcept>

#include "merge/collective.h"

namespace xmlt::merge {

std::unique_ptr<Collective> MakeCollective(const std::string& name, size_t devices) {
  // "ring" is the partitioned sum's historical name: users type it and checkpoints record it (a
  // resume must repeat it), so it stays the spelling.
  if (name == "ring") return MakeCpuPartitionedSumCollective(devices);
  if (name == "tree") return MakeCpuTreeCollective(devices);
  if (name == "naive") return MakeNaiveCollective();
  throw std::invalid_argument("unknown collective '" + name + "' (expected ring, tree or naive)");
}

}  // namespace xmlt::merge
