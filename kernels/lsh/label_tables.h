// SLIDE's hash tables over the output layer: L tables, each bucketing every label by the key its
// weight row hashes to (K codes of a HashFamily). A query hashes a hidden activation the same way
// and gathers the labels of the L buckets it falls in: labels whose rows are near the activation,
// whose logits are likely large. Unlike SLIDE's fixed 128-slot buckets (kept first in, first
// out, which forgets labels and needs gigabytes at Amazon-670K's size), each table is a compact
// array of every label sorted by bucket (L x (2^bits + labels) ids), rebuilt from the codes; a
// bucket larger than the query's cap gives a seeded random sample of itself, not its newest.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <vector>

#include "kernels/lsh/hash_family.h"

namespace xmlt::kernels::lsh {

class LabelTables {
 public:
  // Tables of up to 2^max_bucket_bits buckets each (keys wider than that are hashed down).
  LabelTables(std::unique_ptr<HashFamily> family, size_t labels, int max_bucket_bits = 18, uint64_t seed = 1);

  // Hashes every row of `weights` (labels x dim, row-major) and rebuilds the tables.
  void Build(const float* weights);
  // Hashes again only the labels in `changed` (rows updated since the last build or rehash) and
  // rebuilds the tables from the codes kept for the others.
  void Rehash(const float* weights, const std::vector<uint32_t>& changed);

  // Appends to `out` the distinct labels of the buckets `activation` falls in, at most
  // `bucket_cap` from each bucket; `seen` is the caller's scratch of `labels` stamps and `stamp`
  // a value not yet used in it (a thread's queries count it up; the scratch is cleared when it
  // wraps). Returns the number appended.
  size_t Query(const float* activation, size_t bucket_cap, std::vector<uint32_t>* seen, uint32_t stamp,
               std::vector<uint32_t>* out) const;

  // Every label's key in every table (tables x labels), for checkpoints, and the tables rebuilt
  // from such keys; throws std::invalid_argument for a wrong count or a key beyond the buckets.
  const std::vector<uint32_t>& keys() const { return keys_; }
  void RestoreKeys(const uint32_t* keys, size_t count);

  size_t labels() const { return labels_; }
  size_t tables() const { return family_->l; }
  size_t buckets() const { return size_t(1) << bucket_bits_; }
  const HashFamily& family() const { return *family_; }

 private:
  uint32_t Key(const uint32_t* codes, size_t table) const;
  void RebuildFromCodes();

  std::unique_ptr<HashFamily> family_;
  size_t labels_ = 0;
  int bucket_bits_ = 0;
  int bits_per_code_ = 0;  // the family's
  std::vector<uint32_t> order_;    // the labels in a seeded random order: a bucket's sample
  std::vector<uint32_t> keys_;     // keys_[t * labels + label]
  std::vector<uint32_t> offsets_;  // per table, buckets + 1
  std::vector<uint32_t> ids_;      // per table, `labels` ids sorted by bucket
};

}  // namespace xmlt::kernels::lsh
