// The shortlists' scorers; see shortlist_scorer.h.
#include "engine/shortlist_scorer.h"

#include <stdexcept>

#include "engine/evaluator.h"
#ifdef XMLT_HAVE_CUDA
#include "engine/cuda_shortlist_scorer.h"
#endif

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

std::unique_ptr<ShortlistScorer> MakeShortlistScorer(const DeviceSpec& spec, const kernels::Model<float>& mlp,
                                                     uint32_t k, kernels::OutputMath math,
                                                     const data::Dataset& dataset) {
  if (spec.kind == DeviceKind::kCpu) return std::make_unique<HostShortlistScorer>(mlp, k, math);
#ifdef XMLT_HAVE_CUDA
  return MakeCudaShortlistScorer(spec, mlp, k, math, dataset);
#else
  (void)dataset;
  throw std::invalid_argument("device " + spec.id + ": this build has no CUDA backend");
#endif
}

}  // namespace xmlt::engine
