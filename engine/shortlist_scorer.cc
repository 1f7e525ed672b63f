// The host's scorer of the shortlists; see shortlist_scorer.h.
#include "engine/shortlist_scorer.h"

#include "engine/evaluator.h"

namespace xmlt::engine {
namespace {

// The host's cores, whichever CPU device asks: CPU devices of a run share them.
class HostShortlistScorer final : public ShortlistScorer {
 public:
  HostShortlistScorer(const kernels::Model<float>& mlp, uint32_t k, kernels::OutputMath math)
      : mlp_(mlp), k_(k), math_(math == kernels::OutputMath::kBf16 ? math : kernels::OutputMath::kFp32) {}

  void Score(const data::Dataset& dataset, const uint64_t* rows, size_t count, uint32_t* top,
             const std::function<bool()>& stopped) override {
    TopLabelsOfRows(mlp_, dataset, rows, count, k_, math_, top, stopped);
  }

 private:
  const kernels::Model<float>& mlp_;
  uint32_t k_;
  kernels::OutputMath math_;
};

}  // namespace

std::unique_ptr<ShortlistScorer> MakeHostShortlistScorer(const kernels::Model<float>& mlp, uint32_t k,
                                                         kernels::OutputMath math) {
  return std::make_unique<HostShortlistScorer>(mlp, k, math);
}

}  // namespace xmlt::engine
