// The shortlists on a GPU: a copy of the model in the GPU's memory, each chunk's forward pass and
// its top k there (kernels/cuda/top_k.h: a block per row beyond 32), only the labels copied back.
#include "engine/cuda_shortlist_scorer.h"

#include <algorithm>
#include <stdexcept>
#include <string>
#include <vector>

#include "data/sparse_batch.h"
#include "engine/device.h"
#include "engine/evaluator.h"
#include "kernels/context_lost.h"
#include "kernels/cuda/cuda_mlp.h"

namespace xmlt::engine {
namespace {

class CudaShortlistScorer final : public ShortlistScorer {
 public:
  CudaShortlistScorer(const DeviceSpec& spec, const kernels::Model<float>& mlp, uint32_t k, kernels::OutputMath math,
                      const DeviceLimits& limits)
      : k_(k),
        limits_(limits),
        mlp_(spec.ordinal, mlp.shape, limits.max_rows, limits.max_feature_nnz, limits.max_label_nnz,
             kernels::cuda::DenseMath(math), k) {
    mlp_.UploadParams(mlp.params.data(), mlp.params.size());
  }

  void Score(const data::Dataset& dataset, const uint64_t* rows, size_t count, uint32_t* top,
             const std::function<bool()>& stopped) override {
    std::vector<uint64_t> chunk;
    uint64_t feature_nnz = 0, label_nnz = 0;
    size_t done = 0;  // rows before `chunk`
    const auto flush = [&] {
      if (chunk.empty()) return;
      data::GatherBatch(dataset, chunk.data(), chunk.size(), &batch_);
      mlp_.Predict(batch_, k_, top + done * k_, nullptr, nullptr);
      done += chunk.size();
      chunk.clear();
      feature_nnz = label_nnz = 0;
    };
    for (size_t i = 0; i < count; ++i) {
      const uint64_t f = dataset.features.RowSize(rows[i]), l = dataset.labels.RowSize(rows[i]);
      if (chunk.size() == limits_.max_rows || feature_nnz + f > limits_.max_feature_nnz ||
          label_nnz + l > limits_.max_label_nnz) {
        flush();
        if (stopped && stopped()) return;
      }
      chunk.push_back(rows[i]);
      feature_nnz += f;
      label_nnz += l;
    }
    flush();
  }

 private:
  uint32_t k_;
  DeviceLimits limits_;
  kernels::cuda::CudaMlp mlp_;
  data::SparseBatch batch_;
};

}  // namespace

std::unique_ptr<ShortlistScorer> MakeCudaShortlistScorer(const DeviceSpec& spec, const kernels::Model<float>& mlp,
                                                         uint32_t k, kernels::OutputMath math,
                                                         const data::Dataset& dataset) {
  // The bounds hold any chunk of the dataset's rows: the sums of its largest rows.
  const DeviceLimits limits = LimitsFor(dataset, std::min<uint64_t>(LogitChunkRows(mlp.shape.num_labels),
                                                                    std::max<uint64_t>(dataset.num_rows(), 1)));
  try {
    return std::make_unique<CudaShortlistScorer>(spec, mlp, k, math, limits);
  } catch (const kernels::ContextLost& e) {
    throw kernels::ContextLost("device " + spec.id + ": cannot score the ranker's shortlists: " + e.what());
  } catch (const std::runtime_error& e) {
    throw std::runtime_error("device " + spec.id + ": cannot score the ranker's shortlists: " + e.what());
  }
}

}  // namespace xmlt::engine
