// Shared pieces of the CPU collectives; see collective_support.h.
#include "merge/collective_support.h"

#include <stdexcept>
#include <string>

namespace xmlt::merge {

void CheckReplicaPointers(const ReplicaSet& replicas) {
  if (replicas.on_gpus()) throw std::invalid_argument("collective: a host collective given replicas on GPUs");
  const bool bf16 = replicas.in_bf16();
  for (const base::ReplicaParams& x : replicas.members) {
    if (x.in_bf16() != bf16)
      throw std::invalid_argument("collective: some replicas keep their weights in bf16 and others in fp32");
    if (!bf16 && x.params == nullptr && replicas.size > 0)
      throw std::invalid_argument("collective: null replica parameters");
  }
}

void CheckWeightedArguments(const ReplicaSet& replicas, const std::vector<double>& weights) {
  CheckReplicaPointers(replicas);
  const size_t n = replicas.count();
  if (n == 0) throw std::invalid_argument("WeightedAllReduce: no replicas");
  if (weights.size() != n) {
    throw std::invalid_argument("WeightedAllReduce: " + std::to_string(weights.size()) +
                                " weights for " + std::to_string(n) + " replicas");
  }
}

}  // namespace xmlt::merge
