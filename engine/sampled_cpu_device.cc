// The CPU device with SLIDE's sampled output layer; see sampled_cpu_device.h.
#include "engine/sampled_cpu_device.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <iomanip>
#include <iostream>
#include <numeric>
#include <sstream>
#include <stdexcept>
#include <string>
#include <vector>

#include "data/sparse_batch.h"
#include "kernels/dropout_mask.h"
#include "kernels/cpu/huge_pages.h"
#include "kernels/lsh/sampled_step.h"
#include "kernels/lsh/label_tables.h"
#include "kernels/lsh/rebuild_schedule.h"

namespace xmlt::engine {

using kernels::DropoutMix;

uint64_t SampledOutputOptions::TableBytes(uint64_t labels) const {
  const uint64_t buckets = uint64_t(1) << bucket_bits;
  return uint64_t(l) * (2 * labels + buckets + 1) * sizeof(uint32_t) +
         labels;  // + the touched marks
}

bool SampledOutputOptions::WeightPaddingFor(uint64_t labels, uint64_t min_active) {
  return labels <= kMaxWeightedRatio * std::max<uint64_t>(min_active, 1);
}

SampledOutputOptions SampledOutputOptions::PresetFor(uint64_t labels) {
  SampledOutputOptions options;
  options.enabled = true;
  if (labels >= 500000) {
    options.hash = "dwta", options.k = 8, options.l = 50;
  } else {
    options.hash = "simhash", options.k = 9, options.l = 50;
  }
  options.weight_padding = WeightPaddingFor(labels, options.min_active);
  return options;
}

namespace {

class SampledCpuDevice final : public Device {
 public:
  SampledCpuDevice(const DeviceSpec& spec, const kernels::Model<float>& initial,
                   const SampledOutputOptions& options, const StepSettings& step_settings)
      : spec_(spec),
        step_settings_(step_settings),
        model_(initial),
        tables_(kernels::lsh::MakeHashFamily(options.hash, options.k, options.l,
                                             initial.shape.hidden.back(), options.seed),
                initial.shape.num_labels, options.bucket_bits, options.seed),
        schedule_(options.first_rebuild, options.rebuild_growth),
        touched_(initial.shape.num_labels, 0) {
    step_.bucket_cap = options.bucket_cap;
    step_.min_active = options.min_active;
    step_.seed = options.seed;
    step_.weight_padding = options.weight_padding;
    report_ = options.report_active_sets;
    // Adagrad's squares for the first layer's weights only: the sampled step has no other state.
    if (step_settings_.input_adagrad_ratio > 0)
      input_squares_.assign(uint64_t(initial.shape.num_features) * initial.shape.hidden[0], 0.0f);
    // Each row's step reads and writes hundreds of scattered output rows: huge pages spare it a
    // TLB miss on nearly each (Amazon-670K shape: 1.24x the steps a second, docs/BENCHMARKS.md).
    kernels::cpu::AdviseHugePages(model_.params.data(), model_.params.size() * sizeof(float));
    Rebuild();
  }
  ~SampledCpuDevice() override {
    if (!report_ || stats_.rows == 0) return;
    std::ostringstream text;
    text << std::fixed << std::setprecision(1) << spec_.id << ": active sets of "
         << double(stats_.active_labels) / double(stats_.rows) << " of " << model_.shape.num_labels
         << " labels a row on average (" << double(stats_.padding_labels) / double(stats_.rows)
         << " of them random padding), over " << stats_.rows << " rows trained\n";
    std::cerr << text.str();
  }

  const DeviceSpec& spec() const override { return spec_; }

  kernels::cpu::LossResult TrainBatch(const data::Dataset& dataset, const uint64_t* rows,
                                      size_t count, float lr) override {
    data::GatherBatch(dataset, rows, count, &batch_);
    // The padding labels are drawn from the batch's rows: the same on a resumed run.
    uint64_t draw = count;
    for (size_t i = 0; i < count; ++i) draw = (draw ^ rows[i]) * 0x100000001B3ull;
    kernels::lsh::SampledRegularization rule;
    rule.dropout = step_settings_.dropout;
    rule.dropout_key =
        DropoutMix(DropoutMix(DropoutMix(step_settings_.seed) ^ step_settings_.stream) ^ steps_);
    rule.input_lr = lr * step_settings_.input_adagrad_ratio;
    rule.input_squares = input_squares_.empty() ? nullptr : input_squares_.data();
    const kernels::cpu::LossResult result = kernels::lsh::SampledTrainStep(
        &model_, batch_, lr, tables_, step_, draw, &touched_, &stats_, rule);
    ++updates_;
    ++steps_;
    if (schedule_.DueAfter(updates_)) Rehash();
    return result;
  }

  float* HostParams() override { return model_.params.data(); }
  size_t NumParams() const override { return model_.params.size(); }
  // The merged (or restored, or rolled back) parameters replace the replica's: new tables.
  void FinishMerge() override { Rebuild(); }
  // The first layer's Adagrad squares, the one optimizer state of the sampled step, written from
  // where they are.
  size_t OptimizerStateSize() const override { return input_squares_.size(); }
  void StreamOptimizerState(const OptimizerStateSink& sink) override {
    if (!input_squares_.empty()) sink(input_squares_.data(), input_squares_.size());
  }
  // The tables as they are (their keys), the rows updated since they were last rehashed and the
  // updates since the last rebuild: a resume inside a mega-batch goes on as if never stopped.
  // With dropout, also the step count its masks are drawn from (as the dense replica's).
  std::vector<uint8_t> SaveExtraState() override {
    const std::vector<uint32_t>& keys = tables_.keys();
    std::vector<uint8_t> state(ExtraStateBytes());
    uint8_t* at = state.data();
    std::memcpy(at, &updates_, sizeof(uint64_t));
    std::memcpy(at += sizeof(uint64_t), touched_.data(), touched_.size());
    std::memcpy(at += touched_.size(), keys.data(), keys.size() * sizeof(uint32_t));
    if (step_settings_.dropout != 0)
      std::memcpy(at + keys.size() * sizeof(uint32_t), &steps_, sizeof steps_);
    return state;
  }
  void RestoreExtraState(const std::vector<uint8_t>& state) override {
    const size_t keys = tables_.keys().size();
    if (state.size() != ExtraStateBytes())
      throw std::invalid_argument(
          spec_.id + ": the saved LSH tables are not of this model and these settings");
    std::vector<uint32_t> saved(keys);
    const uint8_t* at = state.data();
    std::memcpy(&updates_, at, sizeof(uint64_t));
    std::memcpy(touched_.data(), at += sizeof(uint64_t), touched_.size());
    std::memcpy(saved.data(), at += touched_.size(), keys * sizeof(uint32_t));
    tables_.RestoreKeys(saved.data(), saved.size());
    steps_ = 0;
    if (step_settings_.dropout != 0)
      std::memcpy(&steps_, at + keys * sizeof(uint32_t), sizeof steps_);
  }
  void RestoreOptimizerState(const void* values, size_t count) override {
    if (count == 0) {
      std::fill(input_squares_.begin(), input_squares_.end(), 0.0f);
    } else if (count == input_squares_.size()) {
      std::memcpy(input_squares_.data(), values, count * sizeof(float));
    } else {
      throw std::invalid_argument(
          spec_.id + ": optimizer state of " + std::to_string(count) +
          " values for a sampled output layer that keeps " + std::to_string(input_squares_.size()) +
          " (the first layer's Adagrad squares)");
    }
  }

 private:
  const float* OutputWeights() const { return model_.Weight(model_.shape.num_layers() - 1); }
  size_t ExtraStateBytes() const {
    return sizeof(uint64_t) + touched_.size() + tables_.keys().size() * sizeof(uint32_t) +
           (step_settings_.dropout != 0 ? sizeof steps_ : 0);
  }

  // Whole tables from the parameters; the rehash schedule starts again from them.
  void Rebuild() {
    tables_.Build(OutputWeights());
    std::fill(touched_.begin(), touched_.end(), 0);
    updates_ = 0;
  }

  // The rows updated since the last rehash get their keys again (SLIDE's rehash).
  void Rehash() {
    changed_.clear();
    for (uint32_t label = 0; label < touched_.size(); ++label)
      if (touched_[label]) changed_.push_back(label);
    tables_.Rehash(OutputWeights(), changed_);
    std::fill(touched_.begin(), touched_.end(), 0);
  }

  DeviceSpec spec_;
  StepSettings step_settings_;
  kernels::Model<float> model_;
  std::vector<float>
      input_squares_;  // the first layer's Adagrad squares (features x units), or none
  kernels::lsh::LabelTables tables_;
  kernels::lsh::RebuildSchedule schedule_;
  kernels::lsh::SampledStepOptions step_;
  std::vector<uint8_t> touched_;
  std::vector<uint32_t> changed_;
  uint64_t updates_ = 0;                  // since the last rebuild
  uint64_t steps_ = 0;                    // since the run began: the dropout masks' counter
  kernels::lsh::SampledStepStats stats_;  // since this device was made
  bool report_ = false;
  data::SparseBatch batch_;
};

}  // namespace

std::unique_ptr<Device> MakeSampledCpuDevice(const DeviceSpec& spec,
                                             const kernels::Model<float>& initial,
                                             const DeviceLimits&, float local_momentum,
                                             const SampledOutputOptions& options,
                                             const StepSettings& step_settings) {
  if (spec.kind != DeviceKind::kCpu)
    throw std::invalid_argument("device " + spec.id +
                                ": the sampled output layer runs on CPU devices");
  if (local_momentum != 0.0f)
    throw std::invalid_argument(
        "device " + spec.id +
        ": the sampled output layer steps with plain SGD; its local momentum must be 0");
  if (options.k == 0 || options.l == 0 || options.bucket_cap == 0)
    throw std::invalid_argument(
        "the sampled output layer needs K, L and a bucket size of at least 1");
  if (step_settings.weight_decay != 0)
    throw std::invalid_argument("device " + spec.id +
                                ": the sampled output layer has no weight decay");
  if (!(step_settings.dropout >= 0 && step_settings.dropout < 1))
    throw std::invalid_argument("device " + spec.id + ": dropout must be in [0, 1)");
  if (!(step_settings.input_adagrad_ratio >= 0) ||
      !std::isfinite(step_settings.input_adagrad_ratio))
    throw std::invalid_argument("device " + spec.id +
                                ": the first layer's Adagrad rate must be a finite number >= 0");
  return std::make_unique<SampledCpuDevice>(spec, initial, options, step_settings);
}

}  // namespace xmlt::engine
