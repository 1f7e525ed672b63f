// The merges' argument checks; see merge_checks.h.
#include "merge/merge_checks.h"

#include <stdexcept>
#include <string>
#include <utility>

namespace xmlt::merge {

void CheckReplicasAndGlobal(const ReplicaSet& replicas, const GlobalModel* global, bool other_ranks) {
  if (replicas.count() == 0) throw std::invalid_argument("merge: no replicas");
  if (global == nullptr) throw std::invalid_argument("merge: no global model");
  for (const base::ReplicaParams& x : replicas.members)
    if (x.params == nullptr && !x.in_bf16() && replicas.size > 0 && !other_ranks)
      throw std::invalid_argument("merge: null replica parameters");
  if (global->size() != replicas.size || global->previous_size() != replicas.size) {
    throw std::invalid_argument("merge: replicas have " + std::to_string(replicas.size) + " parameters, global model " +
                                std::to_string(global->size()) + " (previous " +
                                std::to_string(global->previous_size()) + ")");
  }
}

void CheckOnHost(const ReplicaSet& replicas, const GlobalModel* global, const std::string& merge) {
  if (replicas.on_gpus())
    throw std::invalid_argument(merge + " merge: runs on replicas in host memory, these are on GPUs");
  if (global != nullptr && global->newer_on_gpus())
    throw std::logic_error(merge + " merge: the global model is newer on the GPUs (SyncToHost first)");
}

void CheckFp32Replicas(const ReplicaSet& replicas, const std::string& who) {
  for (const base::ReplicaParams& x : replicas.members)
    if (x.in_bf16())
      throw std::invalid_argument(who + " reads and writes fp32 replicas in place; these keep their weights in bf16 "
                                  "(--weights fp32 runs it)");
}

void CheckOptionalInput(const MergeInput& input, size_t replicas, const std::string& merge) {
  const std::pair<const char*, size_t> sizes[] = {
      {"batch", input.batch.size()}, {"updates", input.updates.size()}, {"lr", input.lr.size()}};
  for (const auto& [what, got] : sizes) {
    if (got != 0 && got != replicas) {
      throw std::invalid_argument(merge + " merge: " + what + " has " + std::to_string(got) +
                                  " entries for " + std::to_string(replicas) + " replicas");
    }
  }
}

}  // namespace xmlt::merge
