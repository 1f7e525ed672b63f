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

// Where the shards of the labels begin: shards + 1 ascending labels from 0 to num_labels, cut so
// that each shard holds about as many pairs (its labels' weights, the work of an epoch) as the
// others.
std::vector<uint32_t> RankerShardBorders(const LinearRanker& ranker, uint32_t shards);

// One epoch: for every row in order, RankerTrainRow on its candidates, the row's labels then the
// shortlist at shortlists + row * shortlist_size (CandidatesOf), at rate `lr`, split into
// `shards` tasks (RankerShardBorders) that the threads run together. Returns the epoch's loss,
// the sum of the rows' losses before their steps.
double RankerTrainEpoch(LinearRanker* ranker, const data::CsrMatrix& features, const data::CsrMatrix& labels,
                        const uint32_t* shortlists, uint32_t shortlist_size, float lr, uint32_t shards);

}  // namespace xmlt::kernels
