// Label-sharded epochs of the linear ranker; see linear_ranker_epoch.h.
#include "kernels/linear_ranker_epoch.h"

#include <tbb/parallel_for.h>

#include <algorithm>
#include <stdexcept>

namespace xmlt::kernels {

std::vector<uint64_t> RankerLabelWork(uint64_t num_labels, const data::CsrMatrix& features,
                                      const data::CsrMatrix& labels, const uint32_t* shortlists,
                                      uint32_t shortlist_size) {
  std::vector<uint64_t> work(num_labels, 1);
  for (uint64_t row = 0; row < features.num_rows; ++row) {
    const uint64_t row_features = features.RowEnd(row) - features.RowBegin(row);
    for (uint64_t j = labels.RowBegin(row); j < labels.RowEnd(row); ++j)
      if (labels.col_idx[j] < num_labels) work[labels.col_idx[j]] += row_features;
    for (uint32_t i = 0; i < shortlist_size; ++i) {
      const uint32_t label = shortlists[row * shortlist_size + i];
      if (label < num_labels) work[label] += row_features;
    }
  }
  return work;
}

std::vector<uint32_t> RankerShardBorders(const std::vector<uint64_t>& work, uint32_t shards) {
  if (shards == 0) throw std::invalid_argument("the linear ranker needs at least one shard");
  const uint64_t num_labels = work.size();
  double total = 0;
  for (const uint64_t w : work) total += double(w);
  std::vector<uint32_t> borders(shards + 1, uint32_t(num_labels));
  borders[0] = 0;
  double done = 0;
  uint32_t shard = 1;
  for (uint64_t label = 0; label < num_labels && shard < shards; ++label) {
    done += double(work[label]);
    // Shard `shard` begins after the label that brings the work to its share.
    while (shard < shards && done * shards >= total * shard) borders[shard++] = uint32_t(label + 1);
  }
  return borders;
}

double RankerTrainEpoch(LinearRanker* ranker, const data::CsrMatrix& features, const data::CsrMatrix& labels,
                        const uint32_t* shortlists, uint32_t shortlist_size, float lr, uint32_t shards) {
  if (features.num_rows != labels.num_rows)
    throw std::invalid_argument("the linear ranker's features and labels differ in their rows");
  const std::vector<uint32_t> borders =
      RankerShardBorders(RankerLabelWork(ranker->num_labels, features, labels, shortlists, shortlist_size), shards);
  std::vector<double> losses(shards, 0.0);
  tbb::parallel_for(uint32_t(0), shards, [&](uint32_t shard) {
    const uint32_t lo = borders[shard], hi = borders[shard + 1];
    if (lo == hi) return;
    RankerRowGradient gradient;
    RankerCandidates mine;
    double loss = 0;
    for (uint64_t row = 0; row < features.num_rows; ++row) {
      const uint32_t* shortlist = shortlist_size == 0 ? nullptr : shortlists + row * shortlist_size;
      const RankerCandidates all = CandidatesOf(labels, row, shortlist, shortlist_size, ranker->num_labels);
      mine.labels.clear();
      mine.positive.clear();
      for (size_t i = 0; i < all.labels.size(); ++i)
        if (all.labels[i] >= lo && all.labels[i] < hi) {
          mine.labels.push_back(all.labels[i]);
          mine.positive.push_back(all.positive[i]);
        }
      if (!mine.labels.empty()) loss += RankerTrainRow(ranker, features, row, mine, lr, &gradient);
    }
    losses[shard] = loss;
  });
  double loss = 0;
  for (const double l : losses) loss += l;
  return loss;
}

}  // namespace xmlt::kernels
