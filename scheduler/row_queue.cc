// The rows a run deals out; see row_queue.h.
#include "scheduler/row_queue.h"

#include <algorithm>
#include <stdexcept>

namespace xmlt::scheduler {

size_t RowQueue::Take(size_t want, size_t offset) {
  uint64_t* out = arena_.data() + offset;
  if (returned_.empty()) return sampler_.Take(want, out);
  const size_t count = std::min(want, returned_.size());
  std::copy(returned_.begin(), returned_.begin() + count, out);
  returned_.erase(returned_.begin(), returned_.begin() + count);
  return count;
}

void RowQueue::CheckFits(size_t offset, size_t rows) const {
  if (offset + rows > arena_.size()) throw std::logic_error("a mega-batch outgrew its row arena");
}

void RowQueue::Return(size_t begin, size_t end) {
  returned_.insert(returned_.end(), arena_.begin() + begin, arena_.begin() + end);
}

uint64_t RowQueue::ToEpochEnd() const {
  const uint64_t epoch = sampler_.order().size(), cursor = sampler_.cursor();
  // A sampler at the end of its order has dealt the whole epoch, but rows returned by a failed
  // device are still the epoch's: the epoch ends once they are trained, not a whole epoch later.
  if (cursor == epoch) return returned_.empty() ? epoch : returned_.size();
  return returned_.size() + epoch - cursor;
}

}  // namespace xmlt::scheduler
