// Synthetic XML data from a hidden topic model: a row mixes a few latent topics, takes most of its
// features and all its labels from them, and the rest of its features from a Zipf background.
#include "data/synthetic_generator.h"

#include <tbb/blocked_range.h>
#include <tbb/enumerable_thread_specific.h>
#include <tbb/parallel_for.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <numeric>
#include <sstream>
#include <stdexcept>
#include <utility>

#include "data/synthetic_draws.h"

namespace xmlt::data {
namespace {

using namespace synthetic;

// Table 1 of the Adaptive SGD paper.
struct Preset {
  const char* name;
  uint64_t features, labels, train_rows, test_rows;
  double nnz_per_row, labels_per_row;
};
constexpr Preset kPresets[] = {
    {"amazon670k", 135909, 670091, 490449, 153025, 76, 5},
    {"delicious200k", 782585, 205443, 196606, 100095, 302, 75},
};

// Beyond this many stored entries (ids + values: 8 bytes each, ~32 GiB) a config is a typo.
constexpr double kMaxTotalNnz = 4294967296.0;

// Shape of the hidden teacher. Chosen so that the data looks like bag-of-words XML sets (head
// labels and stop-word-like features) while a topic stays recognisable from a row's features.
constexpr double kTopicFeatureShare = 0.75;  // features drawn from the row's topics
constexpr double kTopicPopularityExponent = 1.0;
constexpr double kTopicLabelExponent = 0.8;    // within a topic, a few labels dominate
constexpr double kTopicFeatureExponent = 0.6;  // within a topic, flatter: many telling words
constexpr double kBackgroundExponent = 1.0;    // classic Zipf for the shared vocabulary
constexpr double kLabelsPerTopicFactor = 2.5;  // topic label set vs mean labels per row
constexpr double kFeaturesPerTopicFactor = 1.5;
constexpr double kCountSigma = 0.5;  // log-normal spread of per-row counts

// Independent random streams, so that e.g. changing train_rows leaves the test rows unchanged.
enum Stream : uint64_t {
  kTrainCounts = 1,
  kTrainContent,
  kTestCounts,
  kTestContent,
  kTopicFeatures,
  kFeaturePermutation,
  kLabelPermutation
};

// The hidden teacher. Topics are identified by popularity rank; topic t owns the label ranks
// [t*L/K, (t+1)*L/K) and `topic_features` feature ids given by a hash, so nothing here is O(L).
struct Teacher {
  uint64_t seed, features, labels, topics, topic_features;
  uint64_t small_topic_size;  // topics own labels/topics labels, some of them one more
  Permutation feature_ids, label_ids;
  Zipf topic_popularity, topic_feature_rank, background;
  Zipf small_topic_label_rank, large_topic_label_rank;

  uint64_t LabelBegin(uint64_t topic) const {
    return static_cast<uint64_t>(static_cast<unsigned __int128>(topic) * labels / topics);
  }
  uint64_t TopicFeature(uint64_t topic, uint64_t rank) const {
    return Mix(seed ^ kTopicFeatures, topic, rank) % features;
  }
};

Teacher MakeTeacher(const GeneratorConfig& config) {
  uint64_t labels_per_topic = std::clamp<uint64_t>(
      std::llround(kLabelsPerTopicFactor * config.labels_per_row), 4, config.labels);
  uint64_t topics = std::max<uint64_t>(1, config.labels / labels_per_topic);
  uint64_t topic_features = std::clamp<uint64_t>(
      std::ceil(kFeaturesPerTopicFactor * config.nnz_per_row), 16, config.features);
  return Teacher{config.seed,
                 config.features,
                 config.labels,
                 topics,
                 topic_features,
                 config.labels / topics,
                 Permutation(config.features, Mix(config.seed, kFeaturePermutation, 0)),
                 Permutation(config.labels, Mix(config.seed, kLabelPermutation, 0)),
                 Zipf(topics, kTopicPopularityExponent),
                 Zipf(topic_features, kTopicFeatureExponent),
                 Zipf(config.features, kBackgroundExponent),
                 Zipf(config.labels / topics, kTopicLabelExponent),
                 Zipf(config.labels / topics + 1, kTopicLabelExponent)};
}

uint64_t DrawCount(Rng& rng, double mean, uint64_t cap) {
  double factor = std::exp(kCountSigma * rng.Normal() - 0.5 * kCountSigma * kCountSigma);
  double count = std::round(mean * factor);
  return static_cast<uint64_t>(std::clamp(count, 1.0, static_cast<double>(cap)));
}

struct RowTopics {
  uint64_t topic[3];
  double cumulative_weight[3];
  int count = 0;

  uint64_t Pick(Rng& rng) const {
    double u = rng.Uniform() * cumulative_weight[count - 1];
    int i = 0;
    while (i + 1 < count && u >= cumulative_weight[i]) ++i;
    return topic[i];
  }
};

RowTopics DrawTopics(const Teacher& teacher, Rng& rng) {
  RowTopics row;
  double u = rng.Uniform();
  int wanted = u < 0.5 ? 1 : (u < 0.85 ? 2 : 3);
  double total = 0;
  for (int i = 0; i < wanted; ++i) {
    // Popular topics collide often; a few retries, then the row simply has fewer topics.
    for (int attempt = 0; attempt < 8; ++attempt) {
      uint64_t t = teacher.topic_popularity.Draw(rng);
      if (std::find(row.topic, row.topic + row.count, t) != row.topic + row.count) continue;
      row.topic[row.count] = t;
      total += -std::log(1.0 - rng.Uniform());  // Dirichlet(1) mixture weights
      row.cumulative_weight[row.count++] = total;
      break;
    }
  }
  return row;
}

uint64_t TopicLabel(const Teacher& teacher, uint64_t topic, Rng& rng) {
  uint64_t begin = teacher.LabelBegin(topic);
  const Zipf& rank = teacher.LabelBegin(topic + 1) - begin == teacher.small_topic_size
                         ? teacher.small_topic_label_rank
                         : teacher.large_topic_label_rank;
  return teacher.label_ids(begin + rank.Draw(rng));
}

void GenerateLabels(const Teacher& teacher, const RowTopics& topics, uint64_t target, Rng& rng,
                    IdSet& set) {
  set.Reset(target);
  DrawDistinct(set, target, 8 * target + 16,
               [&] { return TopicLabel(teacher, topics.Pick(rng), rng); });
  // More labels than the row's topics own: borrow from other topics, as real rows do.
  DrawDistinct(set, target, 8 * (target - set.size()) + 16,
               [&] { return TopicLabel(teacher, teacher.topic_popularity.Draw(rng), rng); });
  FillByScan(set, target, teacher.labels, rng);
}

void GenerateFeatures(const Teacher& teacher, const RowTopics& topics, uint64_t target, Rng& rng,
                      IdSet& set) {
  set.Reset(target);
  uint64_t from_topics = static_cast<uint64_t>(std::llround(kTopicFeatureShare * target));
  DrawDistinct(set, from_topics, 4 * from_topics + 16, [&] {
    return teacher.TopicFeature(topics.Pick(rng), teacher.topic_feature_rank.Draw(rng));
  });
  DrawDistinct(set, target, 8 * (target - set.size()) + 16,
               [&] { return teacher.feature_ids(teacher.background.Draw(rng)); });
  FillByScan(set, target, teacher.features, rng);
}

// One split (train or test): counts first, so that every row is written straight into its final
// place and the output is the only large allocation.
Dataset GenerateSplit(const GeneratorConfig& config, const Teacher& teacher, uint64_t rows,
                      Stream counts_stream, Stream content_stream, const std::string& name) {
  std::vector<uint64_t> feature_ptr(rows + 1, 0), label_ptr(rows + 1, 0);
  tbb::parallel_for(tbb::blocked_range<uint64_t>(0, rows, 1024), [&](const auto& range) {
    for (uint64_t r = range.begin(); r != range.end(); ++r) {
      Rng rng(Mix(config.seed, counts_stream, r));
      feature_ptr[r + 1] = DrawCount(rng, config.nnz_per_row, config.features);
      label_ptr[r + 1] = DrawCount(rng, config.labels_per_row, config.labels);
    }
  });
  std::partial_sum(feature_ptr.begin(), feature_ptr.end(), feature_ptr.begin());
  std::partial_sum(label_ptr.begin(), label_ptr.end(), label_ptr.begin());

  std::vector<uint32_t> feature_ids(feature_ptr[rows]), label_ids(label_ptr[rows]);
  std::vector<float> values(feature_ptr[rows]);
  tbb::enumerable_thread_specific<IdSet> sets;
  tbb::parallel_for(tbb::blocked_range<uint64_t>(0, rows, 256), [&](const auto& range) {
    IdSet& set = sets.local();
    for (uint64_t r = range.begin(); r != range.end(); ++r) {
      Rng rng(Mix(config.seed, content_stream, r));
      RowTopics topics = DrawTopics(teacher, rng);

      GenerateLabels(teacher, topics, label_ptr[r + 1] - label_ptr[r], rng, set);
      std::sort(set.ids().begin(), set.ids().end());
      std::copy(set.ids().begin(), set.ids().end(), label_ids.begin() + label_ptr[r]);

      GenerateFeatures(teacher, topics, feature_ptr[r + 1] - feature_ptr[r], rng, set);
      std::sort(set.ids().begin(), set.ids().end());
      // tf-idf: log-scaled draw count times a log idf that grows with the background rank, so
      // stop-word-like head features weigh little; then L2 normalisation as in the real sets.
      double norm = 0;
      uint64_t out = feature_ptr[r];
      for (uint32_t id : set.ids()) {
        double tf = 1.0 + std::log(static_cast<double>(set.Count(id)));
        double idf = std::log(2.0 + static_cast<double>(teacher.feature_ids.Inverse(id)));
        double value = tf * idf;
        norm += value * value;
        feature_ids[out] = id;
        values[out++] = static_cast<float>(value);
      }
      float scale = static_cast<float>(1.0 / std::sqrt(norm));
      for (uint64_t i = feature_ptr[r]; i < out; ++i) values[i] *= scale;
    }
  });

  Dataset dataset;
  dataset.features.num_rows = rows;
  dataset.features.num_cols = config.features;
  dataset.features.row_ptr = SharedArray<uint64_t>(std::move(feature_ptr));
  dataset.features.col_idx = SharedArray<uint32_t>(std::move(feature_ids));
  dataset.features.values = SharedArray<float>(std::move(values));
  dataset.labels.num_rows = rows;
  dataset.labels.num_cols = config.labels;
  dataset.labels.row_ptr = SharedArray<uint64_t>(std::move(label_ptr));
  dataset.labels.col_idx = SharedArray<uint32_t>(std::move(label_ids));
  dataset.source = "synthetic " + name + " (seed " + std::to_string(config.seed) + ")";
  return dataset;
}

std::string JoinedPresetNames() {
  std::string joined;
  for (const Preset& preset : kPresets)
    joined += (joined.empty() ? "" : ", ") + std::string(preset.name);
  return joined;
}

}  // namespace

std::vector<std::string> PresetNames() {
  std::vector<std::string> names;
  for (const Preset& preset : kPresets) names.emplace_back(preset.name);
  return names;
}

GeneratorConfig PresetConfig(const std::string& name, double scale) {
  if (!std::isfinite(scale) || scale <= 0) {
    throw std::invalid_argument("synthetic preset scale must be a positive number, got " +
                                std::to_string(scale));
  }
  for (const Preset& preset : kPresets) {
    if (name != preset.name) continue;
    auto scaled = [scale](uint64_t n) {
      // Capped so the conversion stays defined; ValidateConfig then rejects absurd sizes.
      double value = std::clamp(std::round(static_cast<double>(n) * scale), 1.0, 1e18);
      return static_cast<uint64_t>(value);
    };
    GeneratorConfig config;
    config.features = scaled(preset.features);
    config.labels = scaled(preset.labels);
    config.train_rows = scaled(preset.train_rows);
    config.test_rows = scaled(preset.test_rows);
    config.nnz_per_row = std::min(preset.nnz_per_row, static_cast<double>(config.features));
    config.labels_per_row = std::min(preset.labels_per_row, static_cast<double>(config.labels));
    return config;
  }
  throw std::invalid_argument("unknown synthetic preset '" + name +
                              "'; valid presets: " + JoinedPresetNames());
}

void ValidateConfig(const GeneratorConfig& config) {
  auto fail = [](const std::string& message) {
    throw std::invalid_argument("synthetic data config: " + message);
  };
  constexpr uint64_t kMaxIds = std::numeric_limits<uint32_t>::max();
  if (config.features == 0 || config.features > kMaxIds) {
    fail("features = " + std::to_string(config.features) + " must be in [1, " +
         std::to_string(kMaxIds) + "] (feature ids are uint32)");
  }
  if (config.labels == 0 || config.labels > kMaxIds) {
    fail("labels = " + std::to_string(config.labels) + " must be in [1, " +
         std::to_string(kMaxIds) + "] (label ids are uint32)");
  }
  if (config.train_rows > kMaxGeneratedRows || config.test_rows > kMaxGeneratedRows) {
    fail("train_rows and test_rows must be at most 2^40");
  }
  if (!std::isfinite(config.nnz_per_row) || config.nnz_per_row < 1 ||
      config.nnz_per_row > static_cast<double>(config.features)) {
    fail("nnz_per_row = " + std::to_string(config.nnz_per_row) +
         " must be in [1, features = " + std::to_string(config.features) + "]");
  }
  if (!std::isfinite(config.labels_per_row) || config.labels_per_row < 1 ||
      config.labels_per_row > static_cast<double>(config.labels)) {
    fail("labels_per_row = " + std::to_string(config.labels_per_row) +
         " must be in [1, labels = " + std::to_string(config.labels) + "]");
  }
  double rows = static_cast<double>(config.train_rows) + static_cast<double>(config.test_rows);
  // The log-normal row counts average slightly above their mean; leave a margin.
  if (rows * config.nnz_per_row * 1.1 > kMaxTotalNnz ||
      rows * config.labels_per_row * 1.1 > kMaxTotalNnz) {
    std::ostringstream message;
    message << "rows x per-row means give about " << rows * config.nnz_per_row << " feature and "
            << rows * config.labels_per_row << " label entries; the limit is "
            << kMaxTotalNnz / 1.1;
    fail(message.str());
  }
}

GeneratedData Generate(const GeneratorConfig& config) {
  ValidateConfig(config);
  Teacher teacher = MakeTeacher(config);
  GeneratedData data;
  data.train =
      GenerateSplit(config, teacher, config.train_rows, kTrainCounts, kTrainContent, "train");
  data.test = GenerateSplit(config, teacher, config.test_rows, kTestCounts, kTestContent, "test");
  return data;
}

}  // namespace xmlt::data
