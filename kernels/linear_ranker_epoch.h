// Epochs of the linear ranker (linear_ranker.h) over the training rows, on every thread.
//
// Each label is its own model: a row's hinge on one candidate moves only that label's weights and
// bias. So the labels are cut into contiguous shards, one per task, and each task runs every row
// in order on the candidates of its own shard. Every label sees the rows in the same order as in
// one thread, so the model is the same, bit for bit, whatever the number of shards; and the
// shards' writes never share a cache line but at their borders (the pairs of a feature are sorted
// by label, and so are the biases).
#pragma once

#include <cstdint>
#include <vector>

#include "data/csr_matrix.h"
#include "kernels/linear_ranker.h"

namespace xmlt::kernels {

// Each label's share of an epoch's work: 1, plus the features of every row that has the label
// among its candidates (its own labels and its shortlist, shortlists + row * shortlist_size):
// about the pairs the epoch matches for it. Labels at or beyond num_labels are not counted.
std::vector<uint64_t> RankerLabelWork(uint64_t num_labels, const data::CsrMatrix& features,
                                      const data::CsrMatrix& labels, const uint32_t* shortlists,
                                      uint32_t shortlist_size);

// Where the shards of the labels begin: shards + 1 ascending labels from 0 to work.size(), cut so
// that each shard holds about as much of `work` as the others (a frequent label weighs more than
// its pairs say: it meets the same features again in many rows).
std::vector<uint32_t> RankerShardBorders(const std::vector<uint64_t>& work, uint32_t shards);

// One epoch: for every row in order, RankerTrainRow on its candidates, the row's labels then the
// shortlist at shortlists + row * shortlist_size (CandidatesOf), at rate `lr`, split into `shards`
// tasks (RankerShardBorders of RankerLabelWork) that the threads run together. Returns the
// epoch's loss, the sum of the rows' losses before their steps.
double RankerTrainEpoch(LinearRanker* ranker, const data::CsrMatrix& features, const data::CsrMatrix& labels,
                        const uint32_t* shortlists, uint32_t shortlist_size, float lr, uint32_t shards);

}  // namespace xmlt::kernels
