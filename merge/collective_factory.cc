// Chooses a collective by its name ("ring", "tree", "naive"), as options and the CLI spell it.
#include <stdexcept>

#include "merge/collective.h"

namespace xmlt::merge {

// "ring" is the partitioned sum's historical name: users type it and checkpoints record it (a
// resume must repeat it), so it stays the spelling.
CollectiveKind ParseCollectiveKind(const std::string& name) {
  if (name == "ring") return CollectiveKind::kPartitionedSum;
  if (name == "tree") return CollectiveKind::kTree;
  if (name == "naive") return CollectiveKind::kNaive;
  if (name == "nccl") return CollectiveKind::kNccl;
  throw std::invalid_argument("unknown collective '" + name + "' (expected ring, tree, naive or nccl)");
}

const char* CollectiveName(CollectiveKind kind) {
  switch (kind) {
    case CollectiveKind::kPartitionedSum: return "ring";
    case CollectiveKind::kTree: return "tree";
    case CollectiveKind::kNaive: return "naive";
    case CollectiveKind::kNccl: return "nccl";
  }
  return "?";
}

std::unique_ptr<Collective> MakeCollective(CollectiveKind kind, size_t devices) {
  switch (kind) {
    case CollectiveKind::kPartitionedSum: return MakeCpuPartitionedSumCollective(devices);
    case CollectiveKind::kTree: return MakeCpuTreeCollective(devices);
    case CollectiveKind::kNaive: return MakeNaiveCollective();
    case CollectiveKind::kNccl:
      throw std::invalid_argument("the nccl collective merges replicas on GPUs only, not on the host");
  }
  throw std::invalid_argument("unknown collective");
}

std::unique_ptr<Collective> MakeCollective(const std::string& name, size_t devices) {
  return MakeCollective(ParseCollectiveKind(name), devices);
}

}  // namespace xmlt::merge
