// Hash quality of SLIDE's tables (kernels/lsh): the share of each activation's true top-5 logits
// (the dense forward over every label, bias included) that the tables' active set recovers, for
// SimHash and DWTA over a grid of K and L, beside the mean active-set size and what a uniformly
// random set of that size recovers. Either a random output layer (labels x dim, normal weights)
// queried by random ReLU activations (normal, negatives zeroed), or a trained model (--model)
// queried by its last hidden layer on the first rows of --data. A markdown table, not timings: a
// plain program rather than a Google Benchmark one (scripts/bench-hash-quality.sh runs it).
// Usage: hash_quality [--labels N --dim D | --model FILE --data FILE] [--queries Q]
//                     [--k 4,6,8,9,12] [--l 10,25,50] [--bucket B] [--seed S]
#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <exception>
#include <random>
#include <sstream>
#include <string>
#include <vector>

#include "data/dataset_loader.h"
#include "data/row_normalization.h"
#include "engine/model_file.h"
#include "kernels/lsh/active_set_recall.h"
#include "kernels/lsh/hash_family.h"
#include "kernels/lsh/label_tables.h"
#include "kernels/model.h"

namespace {

std::vector<size_t> ParseList(const char* text) {
  std::vector<size_t> values;
  std::stringstream in(text);
  for (std::string item; std::getline(in, item, ',');) values.push_back(std::stoul(item));
  return values;
}

[[noreturn]] void Usage() {
  std::fprintf(stderr, "usage: hash_quality [--labels N --dim D | --model FILE --data FILE] [--queries Q] "
                       "[--k K,...] [--l L,...] [--bucket B] [--seed S]\n");
  std::exit(2);
}

// The last hidden layer (after its ReLU) of the first `n` rows of `data`, n x its width; rows are
// normalized first when the model was trained so.
std::vector<float> LastHidden(const xmlt::kernels::Model<float>& model, const xmlt::data::Dataset& raw, size_t n) {
  const xmlt::data::Dataset d = model.shape.normalize_rows ? xmlt::data::NormalizeRowsL2(raw) : raw;
  const auto& hidden = model.shape.hidden;
  std::vector<float> out(n * hidden.back());
  for (size_t r = 0; r < n; ++r) {
    std::vector<float> h(model.Bias(0), model.Bias(0) + hidden[0]);
    for (uint64_t e = d.features.RowBegin(r); e < d.features.RowEnd(r); ++e) {
      const uint32_t f = d.features.col_idx[e];
      if (f >= model.shape.num_features) continue;  // a feature the model never saw
      const float v = d.features.binary() ? 1.0f : d.features.values[e];
      const float* w = model.Weight(0) + size_t(f) * hidden[0];  // layer 0: a row per feature
      for (size_t j = 0; j < hidden[0]; ++j) h[j] += v * w[j];
    }
    for (float& x : h) x = std::max(x, 0.0f);
    for (size_t layer = 1; layer < hidden.size(); ++layer) {  // outputs x inputs
      std::vector<float> next(model.Bias(layer), model.Bias(layer) + hidden[layer]);
      for (size_t o = 0; o < next.size(); ++o) {
        for (size_t i = 0; i < h.size(); ++i) next[o] += model.Weight(layer)[o * h.size() + i] * h[i];
        next[o] = std::max(next[o], 0.0f);
      }
      h.swap(next);
    }
    std::copy(h.begin(), h.end(), out.begin() + int64_t(r * h.size()));
  }
  return out;
}

}  // namespace

int main(int argc, char** argv) {
  using namespace xmlt::kernels::lsh;
  size_t labels = 983, dim = 128, queries = 500, bucket = 128, seed = 1;
  std::string model_path, data_path;
  std::vector<size_t> ks = {4, 6, 8, 9, 12}, ls = {10, 25, 50};
  for (int i = 1; i < argc; ++i) {
    if (i + 1 >= argc) Usage();
    const std::string flag = argv[i];
    const char* value = argv[++i];
    try {
      if (flag == "--labels") labels = std::stoul(value);
      else if (flag == "--dim") dim = std::stoul(value);
      else if (flag == "--queries") queries = std::stoul(value);
      else if (flag == "--bucket") bucket = std::stoul(value);
      else if (flag == "--seed") seed = std::stoul(value);
      else if (flag == "--k") ks = ParseList(value);
      else if (flag == "--l") ls = ParseList(value);
      else if (flag == "--model") model_path = value;
      else if (flag == "--data") data_path = value;
      else Usage();
    } catch (const std::exception&) {
      Usage();
    }
  }
  constexpr size_t kTop = 5;
  if (model_path.empty() != data_path.empty()) Usage();

  std::vector<float> rows, bias, activations;
  std::string what;
  try {
    if (!model_path.empty()) {
      const xmlt::kernels::Model<float> model = xmlt::engine::LoadModel(model_path).mlp;
      const xmlt::data::Dataset data = xmlt::data::LoadDataset(data_path);
      queries = std::min<size_t>(queries, data.num_rows());
      labels = model.shape.num_labels, dim = model.shape.hidden.back();
      const size_t last = model.shape.num_layers() - 1;
      rows.assign(model.Weight(last), model.Weight(last) + labels * dim);
      bias.assign(model.Bias(last), model.Bias(last) + labels);
      activations = LastHidden(model, data, queries);
      what = "model " + model.shape.ToString() + ", the last hidden layer of the data's first rows";
    } else {
      std::mt19937_64 rng(seed);
      std::normal_distribution<float> normal(0.0f, 1.0f);
      rows.resize(labels * dim), activations.resize(queries * dim);
      for (float& w : rows) w = normal(rng);
      for (float& h : activations) h = std::max(normal(rng), 0.0f);
      what = "random normal output layer, random ReLU activations";
    }
  } catch (const std::exception& e) {
    std::fprintf(stderr, "hash_quality: %s\n", e.what());
    return 1;
  }
  if (labels < kTop || dim == 0 || queries == 0) Usage();
  const std::vector<uint32_t> top =
      TopLabels(rows.data(), bias.empty() ? nullptr : bias.data(), labels, dim, activations.data(), queries, kTop);

  std::printf("%s: %zu labels, dim %zu, %zu queries, buckets of up to %zu labels, seed %zu\n\n", what.c_str(), labels,
              dim, queries, bucket, seed);
  // The ratio is to a random set's expected recall, its size over the labels (the drawn set's
  // recall, beside it, is that plus sampling noise).
  std::printf("| hash | K | L | active labels (mean) | top-5 recall | random set's recall | ratio |\n");
  std::printf("|---|---|---|---|---|---|---|\n");
  for (const char* name : {"simhash", "dwta"}) {
    for (const size_t k : ks) {
      for (const size_t l : ls) {
        LabelTables tables(MakeHashFamily(name, k, l, dim, seed + 1), labels, 18, seed + 2);
        tables.Build(rows.data());
        const ActiveSetRecall r =
            MeasureActiveSetRecall(tables, activations.data(), queries, top, kTop, bucket, seed + 3);
        const double expected = r.active / double(labels);
        char ratio[32] = "-";
        if (expected > 0) std::snprintf(ratio, sizeof ratio, "%.1f", r.recall / expected);
        std::printf("| %s | %zu | %zu | %.1f (%.1f%%) | %.3f | %.3f | %s |\n", name, k, l, r.active,
                    100.0 * expected, r.recall, r.random_recall, ratio);
        std::fflush(stdout);
      }
    }
  }
  return 0;
}
