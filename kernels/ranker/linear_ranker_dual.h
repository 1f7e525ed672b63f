// Training of the linear ranker (linear_ranker.h): for each label, the minimum of its
// L2-regularized squared hinge over the rows that have it among their candidates (its own rows
// and the rows whose MLP shortlist holds it),
//   min over w, b of  0.5 (|w|^2 + b^2) + C sum_i max(0, 1 - y_i (w . x_i + b))^2,
// with y_i = +1 on the label's rows and -1 on the others, and w restricted to the label's pairs.
// Solved in the dual by coordinate descent (Hsieh et al., ICML 2008: liblinear's solver for this
// loss, which PECOS's and Bonsai's linear models use, C = 1 as theirs): one pass visits each of
// the label's rows once, in an order drawn from the label, and moves its dual variable to the
// minimum along it. A label stops when its projected gradients span less than the tolerance, or
// after the most passes. The bias is a weight on a constant feature of value 1, regularized as
// liblinear's is.
//
// Solved with an L2 term, as the libraries solve it, rather than by epochs of Adagrad whose rate
// was the only regularizer: on EURLEX57K's held-out rows this linear model alone ranks above both
// the MLP whose shortlist it re-ranks and the Adagrad epochs it replaced
// (measured: docs/experiments/peers.md).
//
// The labels are independent: they run on every thread, each label's rows in its own order, so
// the model is the same, bit for bit, whatever the number of threads.
#pragma once

#include <cstdint>
#include <functional>
#include <vector>

#include "data/csr_matrix.h"
#include "kernels/ranker/linear_ranker.h"

namespace xmlt::kernels {

struct RankerDualOptions {
  double c = 1.0;            // the hinge's weight against the regularizer
  uint32_t max_passes = 10;  // over each label's rows
  double tolerance = 0.1;    // on the span of the projected gradients, as liblinear's default
  // Asked before each label and each pass (from every thread): once true, the solve ends within
  // a pass, its weights unfinished (RankerDualReport::stopped), for the caller to drop.
  std::function<bool()> stopped;
  // When given (num_labels entries): only the labels marked non-zero are solved; the others'
  // weights and biases are left as they are. Each label's solve is its own, so solving the labels
  // in two parts gives the model of one solve, bit for bit (run/ranker_stage.cc solves the labels
  // the held-out rows read first).
  const std::vector<uint8_t>* labels = nullptr;
};

struct RankerDualReport {
  uint64_t instances = 0;         // (row, candidate label) pairs: the dual variables
  uint32_t most_passes = 0;       // over the labels
  double mean_passes = 0;         // over the labels with rows
  uint64_t labels_at_limit = 0;   // labels stopped by max_passes, not by the tolerance
  uint64_t labels_solved = 0;     // labels with rows that were solved
  uint64_t total_passes = 0;      // over those labels
  bool stopped = false;           // RankerDualOptions::stopped ended the solve: the weights are unfinished
};

// Fits every label's weights and bias of `ranker` (built from these rows: BuildLinearRanker) on
// the candidates of each row, its labels and the shortlist at shortlists + row * shortlist_size
// (CandidatesOf). The weights and biases it had are replaced (those of the labels solved, with
// RankerDualOptions::labels). Throws std::invalid_argument for
// features and labels of different rows or for bad options.
RankerDualReport TrainRankerDual(LinearRanker* ranker, const data::CsrMatrix& features, const data::CsrMatrix& labels,
                                 const uint32_t* shortlists, uint32_t shortlist_size, const RankerDualOptions& options);

// The report of two solves of disjoint sets of labels over the same rows, as one solve of both.
RankerDualReport CombineRankerDualReports(const RankerDualReport& a, const RankerDualReport& b);

// The primal objective above of one label, over the rows that have it among their candidates:
// what TrainRankerDual minimizes (for tests and reports).
double RankerLabelObjective(const LinearRanker& ranker, const data::CsrMatrix& features, const data::CsrMatrix& labels,
                            const uint32_t* shortlists, uint32_t shortlist_size, uint32_t label, double c);

}  // namespace xmlt::kernels
