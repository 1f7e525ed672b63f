// SLIDE's tables over the output layer; see label_tables.h.
#include "kernels/lsh/label_tables.h"

#include <tbb/blocked_range.h>
#include <tbb/parallel_for.h>

#include <algorithm>
#include <numeric>
#include <random>
#include <stdexcept>
#include <string>

namespace xmlt::kernels::lsh {

LabelTables::LabelTables(std::unique_ptr<HashFamily> family, size_t labels, int max_bucket_bits, uint64_t seed)
    : family_(std::move(family)), labels_(labels) {
  if (!family_) throw std::invalid_argument("LabelTables: no hash family");
  if (labels == 0 || labels > UINT32_MAX) throw std::invalid_argument("LabelTables: label count out of range");
  if (max_bucket_bits < 1 || max_bucket_bits > 28) throw std::invalid_argument("LabelTables: bucket bits out of range");
  bits_per_code_ = family_->bits_per_code();  // kept: Key runs L times for every hashed row
  const size_t key_bits = family_->k * size_t(bits_per_code_);
  bucket_bits_ = int(std::min<size_t>(key_bits, size_t(max_bucket_bits)));
  order_.resize(labels);
  std::iota(order_.begin(), order_.end(), 0u);
  std::shuffle(order_.begin(), order_.end(), std::mt19937_64(seed));
  keys_.assign(family_->l * labels, 0);
  offsets_.assign(family_->l * (buckets() + 1), 0);
  ids_.assign(family_->l * labels, 0);
}

uint32_t LabelTables::Key(const uint32_t* codes, size_t table) const {
  const size_t k = family_->k;
  const int bits = bits_per_code_;
  uint64_t packed = 0;
  for (size_t j = 0; j < k; ++j) packed = (packed << bits) | codes[table * k + j];
  if (size_t(bucket_bits_) == k * size_t(bits)) return uint32_t(packed);
  // Wider than the table: a multiplicative hash keeps the top bucket_bits_ bits.
  return uint32_t((packed * 0x9E3779B97F4A7C15ull) >> (64 - bucket_bits_));
}

void LabelTables::Build(const float* weights) {
  std::vector<uint32_t> all(labels_);
  std::iota(all.begin(), all.end(), 0u);
  Rehash(weights, all);
}

void LabelTables::Rehash(const float* weights, const std::vector<uint32_t>& changed) {
  const size_t l = family_->l, dim = family_->dim;
  for (const uint32_t label : changed)  // checked first: a bad id leaves the tables as they were
    if (label >= labels_) throw std::out_of_range("LabelTables: label " + std::to_string(label) + " beyond the tables");
  // Blocks of rows gathered and hashed together (HashRows: one matrix product for SimHash).
  constexpr size_t kBlock = 256;
  const size_t functions = family_->k * l;
  tbb::parallel_for(tbb::blocked_range<size_t>(0, (changed.size() + kBlock - 1) / kBlock), [&](const auto& range) {
    std::vector<float> rows(kBlock * dim);
    std::vector<uint32_t> codes(kBlock * functions);
    for (size_t block = range.begin(); block != range.end(); ++block) {
      const size_t first = block * kBlock, n = std::min(kBlock, changed.size() - first);
      for (size_t i = 0; i < n; ++i)
        std::copy_n(weights + size_t(changed[first + i]) * dim, dim, rows.data() + i * dim);
      family_->HashRows(rows.data(), n, codes.data());
      // Table by table, so that each table's keys are written in one sweep.
      for (size_t t = 0; t < l; ++t)
        for (size_t i = 0; i < n; ++i) keys_[t * labels_ + changed[first + i]] = Key(codes.data() + i * functions, t);
    }
  });
  RebuildFromCodes();
}

void LabelTables::RestoreKeys(const uint32_t* keys, size_t count) {
  if (count != keys_.size())
    throw std::invalid_argument("LabelTables: " + std::to_string(count) + " keys for " + std::to_string(keys_.size()));
  for (size_t i = 0; i < count; ++i)
    if (keys[i] >= buckets()) throw std::invalid_argument("LabelTables: a key beyond the buckets");
  std::copy(keys, keys + count, keys_.begin());
  RebuildFromCodes();
}

// A counting sort per table, over the labels in their seeded order.
void LabelTables::RebuildFromCodes() {
  const size_t l = family_->l, n = buckets();
  tbb::parallel_for(size_t(0), l, [&](size_t t) {
    const uint32_t* keys = keys_.data() + t * labels_;
    uint32_t* offsets = offsets_.data() + t * (n + 1);
    uint32_t* ids = ids_.data() + t * labels_;
    std::fill(offsets, offsets + n + 1, 0u);
    for (size_t i = 0; i < labels_; ++i) ++offsets[keys[i] + 1];
    for (size_t b = 0; b < n; ++b) offsets[b + 1] += offsets[b];
    std::vector<uint32_t> next(offsets, offsets + n);
    for (const uint32_t label : order_) ids[next[keys[label]]++] = label;
  });
}

size_t LabelTables::Query(const float* activation, size_t bucket_cap, std::vector<uint32_t>* seen, uint32_t stamp,
                          std::vector<uint32_t>* out) const {
  if (seen->size() != labels_) seen->assign(labels_, 0);
  if (stamp == 0) throw std::invalid_argument("LabelTables: stamp 0 marks unseen labels");
  const size_t l = family_->l, n = buckets();
  thread_local std::vector<uint32_t> codes;
  codes.resize(family_->k * l);
  family_->Hash(activation, /*query=*/true, codes.data());
  size_t added = 0;
  for (size_t t = 0; t < l; ++t) {
    const uint32_t key = Key(codes.data(), t);
    const uint32_t* offsets = offsets_.data() + t * (n + 1);
    const uint32_t* ids = ids_.data() + t * labels_;
    const uint32_t end = std::min<uint32_t>(offsets[key + 1], offsets[key] + uint32_t(bucket_cap));
    for (uint32_t i = offsets[key]; i < end; ++i) {
      const uint32_t label = ids[i];
      if ((*seen)[label] == stamp) continue;
      (*seen)[label] = stamp;
      out->push_back(label);
      ++added;
    }
  }
  return added;
}

}  // namespace xmlt::kernels::lsh
