// SLIDE's step (kernels/lsh/sampled_step.h): a row's step over its active labels is the dense
// step of the model whose output layer holds only those labels (every parameter, one and two
// hidden layers), and its gradient agrees with finite differences of the active-set loss; the
// active set holds the tables' candidates and the row's labels, padded to the minimum; with one
// thread the batch step is deterministic, and with several it learns.
#include "kernels/lsh/sampled_step.h"

#include <gtest/gtest.h>
#include <tbb/global_control.h>

#include <algorithm>
#include <cmath>
#include <numeric>
#include <random>
#include <vector>

#include "kernels/cpu/sparse_mlp.h"
#include "kernels/lsh/hash_family.h"
#include "kernels/lsh/label_tables.h"
#include "tests/kernels/kernel_test_util.h"

namespace xmlt::kernels::lsh {
namespace {

// The dense step the sampled one is held against.
using cpu::LossResult;
using cpu::MlpWorkspace;
using cpu::SoftmaxCrossEntropy;
using cpu::StepRule;

// Row `row` of `batch` alone, its labels renamed to their places in `active` (sorted).
data::SparseBatch RowOnActiveLabels(const data::SparseBatch& batch, uint32_t row,
                                    const std::vector<uint32_t>& active) {
  data::SparseBatch one;
  one.num_rows = 1;
  for (uint64_t e = batch.feature_ptr[row]; e < batch.feature_ptr[row + 1]; ++e) {
    one.feature_idx.push_back(batch.feature_idx[e]);
    one.feature_val.push_back(batch.feature_val[e]);
  }
  one.feature_ptr = {0, one.feature_idx.size()};
  for (uint64_t i = batch.label_ptr[row]; i < batch.label_ptr[row + 1]; ++i)
    one.label_idx.push_back(uint32_t(
        std::lower_bound(active.begin(), active.end(), batch.label_idx[i]) - active.begin()));
  one.label_ptr = {0, one.label_idx.size()};
  return one;
}

// The model with only the `active` labels' output rows and biases.
Model<float> Reduced(const Model<float>& model, const std::vector<uint32_t>& active) {
  ModelShape shape = model.shape;
  shape.num_labels = active.size();
  Model<float> reduced = ZeroModel<float>(shape);
  const size_t last = shape.num_layers() - 1;
  for (size_t l = 0; l < last; ++l) {
    std::copy_n(model.Weight(l), model.layers[l].weight.size(), reduced.Weight(l));
    std::copy_n(model.Bias(l), model.layers[l].bias.size(), reduced.Bias(l));
  }
  const uint32_t width = shape.hidden.back();
  for (size_t a = 0; a < active.size(); ++a) {
    std::copy_n(model.Weight(last) + uint64_t(active[a]) * width, width,
                reduced.Weight(last) + a * width);
    reduced.Bias(last)[a] = model.Bias(last)[active[a]];
  }
  return reduced;
}

TEST(SampledStep, ARowsStepIsTheDenseStepOfTheModelWithOnlyItsActiveLabels) {
  for (const std::vector<uint32_t>& hidden :
       {std::vector<uint32_t>{12}, std::vector<uint32_t>{10, 7}}) {
    const ModelShape shape{40, hidden, 30};
    const data::SparseBatch batch = xmlt::testing::RandomBatch(6, 40, 30, 3);
    for (uint32_t row = 0; row < batch.num_rows; ++row) {
      if (batch.NumLabels(row) == 0) continue;
      Model<float> model = xmlt::testing::RandomModel<float>(shape, 5 + row);
      // The row's labels and a handful of others, sorted.
      std::vector<uint32_t> active(batch.label_idx.begin() + int64_t(batch.label_ptr[row]),
                                   batch.label_idx.begin() + int64_t(batch.label_ptr[row + 1]));
      for (const uint32_t extra : {0u, 7u, 13u, 29u})
        if (std::find(active.begin(), active.end(), extra) == active.end()) active.push_back(extra);
      std::sort(active.begin(), active.end());

      Model<float> reduced = Reduced(model, active);
      const data::SparseBatch one = RowOnActiveLabels(batch, row, active);
      MlpWorkspace<float> ws(reduced.shape, 1);
      StepRule<float> rule;
      rule.lr = 0.5f;
      const LossResult dense = TrainStep(&reduced, one, rule, &ws);

      SampledRowScratch s;
      s.active = active;
      std::vector<uint8_t> touched(shape.num_labels, 0);
      SampledForwardHidden(model, batch, row, &s);
      const double loss = SampledBackward(&model, batch, row, 0.5f, &s, &touched);
      EXPECT_NEAR(loss, dense.loss_sum, 1e-5 * std::abs(dense.loss_sum)) << "row " << row;

      const Model<float> expected =
          Reduced(model, active);  // the sampled result, reduced the same way
      for (size_t j = 0; j < reduced.params.size(); ++j)
        ASSERT_NEAR(expected.params[j], reduced.params[j],
                    1e-5f * (1 + std::abs(reduced.params[j])))
            << shape.ToString() << ", row " << row << ", parameter " << j;
      for (uint32_t label = 0; label < shape.num_labels; ++label)
        EXPECT_EQ(touched[label] != 0, std::binary_search(active.begin(), active.end(), label))
            << label;
    }
  }
}

// Under dropout and the first layer's Adagrad the row's step is still the dense step of the reduced
// model under the same rule: the same masks (the row alone, as row 0 of its own batch), the same
// squares, the first layer's bias and the other layers by plain SGD.
TEST(SampledStep, WithDropoutAndAdagradARowsStepIsTheDenseStepUnderTheSameRule) {
  int changed = 0, dropped = 0;  // over every row: squares that moved, units dropped
  for (const std::vector<uint32_t>& hidden :
       {std::vector<uint32_t>{12}, std::vector<uint32_t>{10, 7}}) {
    const ModelShape shape{40, hidden, 30};
    const data::SparseBatch batch = xmlt::testing::RandomBatch(6, 40, 30, 3);
    for (uint32_t row = 0; row < batch.num_rows; ++row) {
      if (batch.NumLabels(row) == 0) continue;
      std::vector<uint32_t> every(shape.num_labels);
      std::iota(every.begin(), every.end(), 0u);
      const data::SparseBatch alone =
          RowOnActiveLabels(batch, row, every);  // labels keep their numbers
      Model<float> model = xmlt::testing::RandomModel<float>(shape, 5 + row);
      std::vector<uint32_t> active(batch.label_idx.begin() + int64_t(batch.label_ptr[row]),
                                   batch.label_idx.begin() + int64_t(batch.label_ptr[row + 1]));
      for (const uint32_t extra : {0u, 7u, 13u, 29u})
        if (std::find(active.begin(), active.end(), extra) == active.end()) active.push_back(extra);
      std::sort(active.begin(), active.end());
      // Squares already summed, as after earlier steps.
      std::vector<float> squares(uint64_t(shape.num_features) * hidden[0]);
      for (size_t i = 0; i < squares.size(); ++i) squares[i] = 0.01f * float(i % 7);

      Model<float> reduced = Reduced(model, active);
      Model<float> velocity = ZeroModel<float>(reduced.shape);
      std::copy(squares.begin(), squares.end(), velocity.Weight(0));
      const data::SparseBatch one = RowOnActiveLabels(batch, row, active);
      MlpWorkspace<float> ws(reduced.shape, 1);
      StepRule<float> rule;
      rule.lr = 0.5f;
      rule.velocity = &velocity;
      rule.input_adagrad = true;
      rule.input_lr = 0.2f;
      rule.dropout = 0.4f;
      rule.dropout_key = 77 + row;
      const LossResult dense = TrainStep(&reduced, one, rule, &ws);

      SampledRegularization regularization;
      regularization.dropout = rule.dropout;
      regularization.dropout_key = rule.dropout_key;
      regularization.input_lr = rule.input_lr;
      regularization.input_squares = squares.data();
      SampledRowScratch plain, s;  // the forward without and with dropout
      SampledForwardHidden(model, alone, 0, &plain);
      s.active = active;
      SampledForwardHidden(model, alone, 0, &s, regularization);
      const double loss = SampledBackward(&model, alone, 0, 0.5f, &s, nullptr, regularization);
      EXPECT_NEAR(loss, dense.loss_sum, 1e-5 * std::abs(dense.loss_sum)) << "row " << row;

      const Model<float> expected = Reduced(model, active);
      for (size_t j = 0; j < reduced.params.size(); ++j)
        ASSERT_NEAR(expected.params[j], reduced.params[j],
                    1e-5f * (1 + std::abs(reduced.params[j])))
            << shape.ToString() << ", row " << row << ", parameter " << j;
      for (size_t i = 0; i < squares.size(); ++i) {
        ASSERT_NEAR(squares[i], velocity.Weight(0)[i], 1e-6f * (1 + squares[i])) << "square " << i;
        changed += squares[i] != 0.01f * float(i % 7);
      }
      for (size_t u = 0; u < hidden[0]; ++u) dropped += plain.hidden[0][u] > 0 && s.hidden[0][u] == 0;
    }
  }
  EXPECT_GT(changed, 10) << "Adagrad's squares hardly moved: not a test of the first layer";
  EXPECT_GT(dropped, 3) << "dropout hardly dropped a unit";
}

// The random padding labels stand for the labels left out: their logits are raised by the log of
// that ratio in the softmax. The step is then the dense step of the reduced model whose padding
// labels' biases are raised by as much (and lowered back after it).
TEST(SampledStep, WeightedPaddingIsTheDenseStepWithThePaddingsLogitsRaised) {
  const ModelShape shape{40, {12}, 30};
  const data::SparseBatch batch = xmlt::testing::RandomBatch(6, 40, 30, 3);
  const float weight = std::log(26.0f / 4.0f);
  int rows = 0;
  for (uint32_t row = 0; row < batch.num_rows; ++row) {
    if (batch.NumLabels(row) == 0) continue;
    ++rows;
    Model<float> model = xmlt::testing::RandomModel<float>(shape, 5 + row);
    SampledRowScratch s;
    s.active.assign(batch.label_idx.begin() + int64_t(batch.label_ptr[row]),
                    batch.label_idx.begin() + int64_t(batch.label_ptr[row + 1]));
    s.padded_from = s.active.size();
    for (const uint32_t extra : {0u, 7u, 13u, 29u})
      if (std::find(s.active.begin(), s.active.end(), extra) == s.active.end())
        s.active.push_back(extra);
    s.padding_log_weight = weight;
    std::vector<uint32_t> sorted = s.active;
    std::sort(sorted.begin(), sorted.end());
    auto padding = [&](uint32_t label) {
      return std::find(s.active.begin() + int64_t(s.padded_from), s.active.end(), label) !=
             s.active.end();
    };

    Model<float> reduced = Reduced(model, sorted);
    const size_t last = shape.num_layers() - 1;
    for (size_t a = 0; a < sorted.size(); ++a)
      if (padding(sorted[a])) reduced.Bias(last)[a] += weight;
    const data::SparseBatch one = RowOnActiveLabels(batch, row, sorted);
    MlpWorkspace<float> ws(reduced.shape, 1);
    StepRule<float> rule;
    rule.lr = 0.5f;
    const LossResult dense = TrainStep(&reduced, one, rule, &ws);
    for (size_t a = 0; a < sorted.size(); ++a)
      if (padding(sorted[a])) reduced.Bias(last)[a] -= weight;

    SampledForwardHidden(model, batch, row, &s);
    const double loss = SampledBackward(&model, batch, row, 0.5f, &s, nullptr);
    EXPECT_NEAR(loss, dense.loss_sum, 1e-5 * std::abs(dense.loss_sum)) << "row " << row;
    const Model<float> expected = Reduced(model, sorted);
    for (size_t j = 0; j < reduced.params.size(); ++j)
      ASSERT_NEAR(expected.params[j], reduced.params[j], 1e-5f * (1 + std::abs(reduced.params[j])))
          << "row " << row << ", parameter " << j;
  }
  EXPECT_GT(rows, 2);
}

// The gradient of the active-set loss by central differences, in float with a wide step, against
// the step's own update (lr 1 leaves -g in each parameter's change).
TEST(SampledStep, TheGradientAgreesWithFiniteDifferencesOfTheActiveSetLoss) {
  for (const float dropout : {0.0f, 0.3f}) {
    SampledRegularization regularization;  // dropout: the loss under the step's own masks
    regularization.dropout = dropout;
    regularization.dropout_key = 5;
    const ModelShape shape{20, {8}, 25};
    const data::SparseBatch batch = xmlt::testing::RandomBatch(4, 20, 25, 9);
    const uint32_t row = 0;
    const Model<float> start = xmlt::testing::RandomModel<float>(shape, 11);
    SampledRowScratch s;
    s.active = {0, 3, 5, 8, 13, 21};
    for (uint64_t i = batch.label_ptr[row]; i < batch.label_ptr[row + 1]; ++i)
      if (std::find(s.active.begin(), s.active.end(), batch.label_idx[i]) == s.active.end())
        s.active.push_back(batch.label_idx[i]);
    auto loss_of = [&](const Model<float>& m) {
      Model<float> copy = m;
      SampledRowScratch t;
      t.active = s.active;
      SampledForwardHidden(copy, batch, row, &t, regularization);
      return SampledBackward(&copy, batch, row, 0.0f, &t, nullptr, regularization);
    };
    Model<float> stepped = start;
    SampledForwardHidden(stepped, batch, row, &s, regularization);
    SampledBackward(&stepped, batch, row, 1.0f, &s, nullptr, regularization);
    int checked = 0;
    for (size_t j = 0; j < start.params.size(); j += 3) {
      const float g = start.params[j] - stepped.params[j];
      Model<float> plus = start, minus = start;
      const float eps = 1e-2f;
      plus.params[j] += eps;
      minus.params[j] -= eps;
      const double fd = (loss_of(plus) - loss_of(minus)) / (2 * eps);
      ASSERT_NEAR(g, fd, 2e-3 + 2e-2 * std::abs(fd))
          << "dropout " << dropout << ", parameter " << j;
      checked += g != 0.0f;
    }
    EXPECT_GT(checked, 10);  // not a test of zeros
  }
}

TEST(SampledStep, TheActiveSetHoldsTheCandidatesAndTheRowsLabelsPaddedToTheMinimum) {
  const ModelShape shape{30, {16}, 500};
  const Model<float> model = xmlt::testing::RandomModel<float>(shape, 2);
  lsh::LabelTables tables(lsh::MakeHashFamily("simhash", 6, 4, 16, 3), 500);
  tables.Build(model.Weight(1));
  const data::SparseBatch batch = xmlt::testing::RandomBatch(5, 30, 500, 4);
  SampledRowScratch s;
  std::mt19937_64 rng(1);
  for (const size_t min_active : {size_t(0), size_t(100), size_t(1000)}) {
    SampledForwardHidden(model, batch, 0, &s);
    SampledActiveLabels(tables, batch, 0, 8, min_active, &rng, &s);
    std::vector<uint32_t> sorted = s.active;
    std::sort(sorted.begin(), sorted.end());
    EXPECT_EQ(std::unique(sorted.begin(), sorted.end()), sorted.end()) << "a label twice";
    for (uint64_t i = batch.label_ptr[0]; i < batch.label_ptr[1]; ++i)
      EXPECT_TRUE(std::binary_search(sorted.begin(), sorted.end(), batch.label_idx[i]));
    std::vector<uint32_t> candidates, seen;
    tables.Query(s.hidden.back().data(), 8, &seen, 1, &candidates);
    for (const uint32_t c : candidates)
      EXPECT_TRUE(std::binary_search(sorted.begin(), sorted.end(), c));
    EXPECT_GE(s.active.size(), std::min<size_t>(min_active, 500));
    if (min_active == 1000) {
      EXPECT_EQ(s.active.size(), 500u);  // every label, and no more
    }
    // The padding comes last, after the candidates and the row's labels, and is weighted by the
    // labels it was drawn from over the labels drawn.
    size_t own = 0;
    for (uint64_t i = batch.label_ptr[0]; i < batch.label_ptr[1]; ++i)
      own +=
          std::find(candidates.begin(), candidates.end(), batch.label_idx[i]) == candidates.end();
    ASSERT_EQ(s.padded_from, candidates.size() + own);
    const size_t drawn = s.active.size() - s.padded_from;
    if (drawn == 0) {
      EXPECT_EQ(s.padding_log_weight, 0.0f);
    } else {
      EXPECT_NEAR(s.padding_log_weight, std::log(double(500 - s.padded_from) / double(drawn)),
                  1e-6);
    }
    if (min_active == 100) {
      EXPECT_GT(s.padding_log_weight, 0.5f) << "expected padding here";
    }
  }
}

// A batch on one thread gives the same model twice; on several, the loss over all labels (the dense
// forward pass, as evaluation computes it) of a learnable task falls.
TEST(SampledStep, OneThreadIsDeterministicAndSeveralLearn) {
  const ModelShape shape{50, {16}, 400};
  const data::SparseBatch batch = xmlt::testing::RandomBatch(64, 50, 400, 8);
  SampledStepOptions options;
  options.bucket_cap = 16;
  options.min_active = 50;
  auto train = [&](int threads, int steps) {
    tbb::global_control limit(tbb::global_control::max_allowed_parallelism, size_t(threads));
    Model<float> model = InitModel<float>(shape, 1);
    lsh::LabelTables tables(lsh::MakeHashFamily("dwta", 2, 10, 16, 5), shape.num_labels);
    std::vector<uint8_t> touched(shape.num_labels, 0);
    for (int step = 0; step < steps; ++step) {
      if (step % 5 == 0) tables.Build(model.Weight(1));
      SampledTrainStep(&model, batch, 2.0f, tables, options, uint64_t(step), &touched);
    }
    return model;
  };
  auto full_loss = [&](const Model<float>& model) {
    MlpWorkspace<float> ws(shape, batch.num_rows);
    Forward(model, batch, &ws);
    const LossResult r = SoftmaxCrossEntropy(ws.logits.data(), batch, shape.num_labels);
    return r.loss_sum / r.labeled_rows;
  };
  const Model<float> a = train(1, 3), b = train(1, 3);
  EXPECT_EQ(a.params, b.params);
  const double before = full_loss(InitModel<float>(shape, 1));
  const double after = full_loss(train(2, 100));
  std::printf(
      "sampled steps on 2 threads: the loss over all 400 labels from %.3f to %.3f in 100 steps\n",
      before, after);
  EXPECT_LT(after, 0.7 * before);
}

}  // namespace
}  // namespace xmlt::kernels::lsh
