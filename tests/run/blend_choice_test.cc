// Tests of the choice of the ranker's blend on held-out rows (run/blend_choice.h).
#include "run/blend_choice.h"

#include <gtest/gtest.h>

#include <utility>
#include <vector>

#include "tests/make_dataset.h"

namespace xmlt::run {
namespace {

using testing::MakeDataset;

// Held-out rows of one true label each, with shortlists where the MLP puts the true label second
// and a linear model that puts it first: P@1 goes from 0 to 1 as the blend rises.
struct HeldOut {
  data::CsrMatrix labels;
  std::vector<uint32_t> shortlists;
  std::vector<float> probabilities, linear_scores;
};

HeldOut SecondPlaceRows(uint32_t rows, float linear_margin) {
  HeldOut h;
  std::vector<testing::DatasetRow> data_rows(rows);
  for (uint32_t r = 0; r < rows; ++r) {
    const uint32_t truth = r % 7, wrong = (r + 1) % 7;
    data_rows[r].labels = {truth};
    const uint32_t rest[3] = {(r + 2) % 7, (r + 3) % 7, (r + 4) % 7};
    h.shortlists.insert(h.shortlists.end(), {wrong, truth, rest[0], rest[1], rest[2]});
    h.probabilities.insert(h.probabilities.end(), {0.5f, 0.3f, 0.1f, 0.05f, 0.05f});
    h.linear_scores.insert(h.linear_scores.end(), {-linear_margin, linear_margin, -5.0f, -5.0f, -5.0f});
  }
  h.labels = MakeDataset(data_rows, 1, 7).labels;
  return h;
}

TEST(BlendChoice, TheChoiceTakesTheBlendOfTheHighestMeanPrecision) {
  const HeldOut h = SecondPlaceRows(20, 3.0f);
  const BlendChoice choice = ChooseBlend(h.labels, h.shortlists.data(), h.probabilities.data(), h.linear_scores.data(), 5);
  // Each form at every weight, the MLP alone (0) once.
  ASSERT_EQ(choice.trials.size(), 2 * BlendGrid().size() - 1);
  EXPECT_EQ(choice.trials.front().blend, 0.0f);
  EXPECT_EQ(choice.trials[11].form, kernels::BlendForm::kGeometric);
  EXPECT_EQ(choice.trials[11].blend, 0.1f);
  EXPECT_DOUBLE_EQ(choice.trials.front().metrics.p1, 0.0);
  // The blend that first puts the true label ahead: a s(3) + (1 - a) 0.3 > a s(-3) + (1 - a) 0.5,
  // a > 0.2 / (s(3) - s(-3) + 0.2) = 0.19...: 0.2 is the first blend on the grid past it.
  EXPECT_FLOAT_EQ(choice.blend, 0.2f);
  EXPECT_EQ(choice.form, kernels::BlendForm::kArithmetic) << "the geometric blends tie at best, and come later";
  EXPECT_DOUBLE_EQ(choice.trials[2].metrics.p1, 1.0);
  EXPECT_DOUBLE_EQ(choice.trials[1].metrics.p1, 0.0);
  // P@3 and P@5 do not move (the true label is always in the top 3), so the mean follows P@1.
  for (const BlendTrial& t : choice.trials) {
    EXPECT_NEAR(t.metrics.p3, 1.0 / 3.0, 1e-12);
    EXPECT_NEAR(t.mean_precision, (t.metrics.p1 + t.metrics.p3 + t.metrics.p5) / 3.0, 1e-12);
  }
}

TEST(BlendChoice, AWorseLinearModelKeepsTheMlpAlone) {
  // The MLP now puts the true label first and the linear model the wrong one: every blend past
  // 0.2 loses P@1.
  HeldOut h = SecondPlaceRows(20, 3.0f);
  for (size_t r = 0; r < 20; ++r) std::swap(h.shortlists[r * 5], h.shortlists[r * 5 + 1]);
  const BlendChoice worse = ChooseBlend(h.labels, h.shortlists.data(), h.probabilities.data(), h.linear_scores.data(), 5);
  EXPECT_EQ(worse.blend, 0.0f);
  EXPECT_DOUBLE_EQ(worse.trials.front().metrics.p1, 1.0);
  EXPECT_DOUBLE_EQ(worse.trials.back().metrics.p1, 0.0);
  // Linear scores in the MLP's order: every blend ranks alike, and the tie keeps 0.
  for (size_t i = 0; i < h.linear_scores.size(); ++i) h.linear_scores[i] = 5.0f - float(i % 5);
  EXPECT_EQ(ChooseBlend(h.labels, h.shortlists.data(), h.probabilities.data(), h.linear_scores.data(), 5).blend, 0.0f);
}

TEST(BlendChoice, UnlabelledRowsAndShortShortlistsCountAsMisses) {
  std::vector<testing::DatasetRow> rows(2);
  rows[0].labels = {1};
  const data::CsrMatrix labels = MakeDataset(rows, 1, 3).labels;
  const std::vector<uint32_t> shortlists = {1, 0, 2, 1};  // two per row: shorter than P@5's depth
  const std::vector<float> probabilities = {0.6f, 0.4f, 0.6f, 0.4f}, scores(4, 0.0f);
  const BlendChoice choice = ChooseBlend(labels, shortlists.data(), probabilities.data(), scores.data(), 2);
  EXPECT_DOUBLE_EQ(choice.trials[0].metrics.p1, 0.5);        // one of two rows right
  EXPECT_DOUBLE_EQ(choice.trials[0].metrics.p5, 0.5 / 5.0);  // one label in five places, over two rows
}

}  // namespace
}  // namespace xmlt::run
