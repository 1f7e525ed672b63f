// The random building blocks of the synthetic generator (synthetic_generator.cc): hashes for
// independent streams, a per-row generator, power-law ranks, a permutation of ids, and the
// distinct ids of one row. Internal to the generator.
#pragma once

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <limits>
#include <numeric>
#include <stdexcept>
#include <vector>

namespace xmlt::data::synthetic {

inline uint64_t Finalize(uint64_t z) {
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
  return z ^ (z >> 31);
}

inline uint64_t Mix(uint64_t a, uint64_t b, uint64_t c) {
  return Finalize(Finalize(Finalize(a + 0x9e3779b97f4a7c15ULL) ^ b) + c);
}

// splitmix64: tiny state, so one generator per row costs nothing and rows stay independent of
// the thread that draws them.
class Rng {
 public:
  explicit Rng(uint64_t seed) : state_(seed) {}
  uint64_t Next() { return Finalize(state_ += 0x9e3779b97f4a7c15ULL); }
  double Uniform() { return static_cast<double>(Next() >> 11) * 0x1.0p-53; }  // [0, 1)
  uint64_t Below(uint64_t n) {
    return static_cast<uint64_t>((static_cast<unsigned __int128>(Next()) * n) >> 64);
  }
  double Normal() {  // Box-Muller; hand-written so the data do not depend on the standard library
    double u1 = 1.0 - Uniform();
    double u2 = Uniform();
    return std::sqrt(-2.0 * std::log(u1)) * std::cos(6.283185307179586 * u2);
  }

 private:
  uint64_t state_;
};

// Ranks 0..n-1 with P(rank r) proportional to (r + 1)^-s. Small n (topic members): exact, by
// binary search in a cumulative table. Large n (vocabulary, topics): inverse CDF of the continuous
// power law on [1, n + 1), with no O(n) table. pow/exp per draw was the generator's hot spot.
class Zipf {
 public:
  static constexpr uint64_t kTableLimit = 4096;

  Zipf(uint64_t n, double exponent) : n_(n) {
    if (n <= kTableLimit) {
      cumulative_.resize(n);
      double total = 0;
      for (uint64_t r = 0; r < n; ++r) cumulative_[r] = total += std::pow(r + 1.0, -exponent);
      return;
    }
    log_span_ = std::log(static_cast<double>(n) + 1.0);
    if (std::abs(exponent - 1.0) > 1e-9) {
      inverse_ = 1.0 / (1.0 - exponent);
      span_ = std::expm1((1.0 - exponent) * log_span_);
    }
  }
  uint64_t Draw(Rng& rng) const {
    double u = rng.Uniform();
    if (!cumulative_.empty()) {
      auto it = std::upper_bound(cumulative_.begin(), cumulative_.end(), u * cumulative_.back());
      return std::min<uint64_t>(it - cumulative_.begin(), n_ - 1);
    }
    double x = inverse_ == 0 ? std::exp(u * log_span_) : std::pow(1.0 + u * span_, inverse_);
    auto rank = static_cast<uint64_t>(x) - 1;
    return std::min(rank, n_ - 1);
  }

 private:
  uint64_t n_;
  std::vector<double> cumulative_;
  double log_span_ = 0, span_ = 0, inverse_ = 0;
};

// A bijection of [0, n) (affine map with a multiplier coprime to n), so that popularity ranks are
// scattered over ids without an O(n) table; its inverse gives a feature's rank back for the idf.
class Permutation {
 public:
  Permutation(uint64_t n, uint64_t seed) : n_(n) {
    if (n <= 1) return;
    Rng rng(seed);
    offset_ = rng.Below(n);
    multiplier_ = 1 + rng.Below(n - 1);
    while (std::gcd(multiplier_, n) != 1) multiplier_ = multiplier_ % (n - 1) + 1;
    inverse_ = ModularInverse(multiplier_, n);
  }
  uint64_t operator()(uint64_t rank) const { return (MulMod(rank, multiplier_) + offset_) % n_; }
  uint64_t Inverse(uint64_t id) const { return MulMod((id + n_ - offset_) % n_, inverse_); }

 private:
  // n <= 2^32 (ids are uint32), so the product fits 64 bits: no slow 128-bit division per id.
  uint64_t MulMod(uint64_t a, uint64_t b) const { return a * b % n_; }
  static uint64_t ModularInverse(uint64_t a, uint64_t n) {
    __int128 t = 0, new_t = 1, r = n, new_r = a;
    while (new_r != 0) {
      __int128 q = r / new_r;
      std::tie(t, new_t) = std::make_pair(new_t, t - q * new_t);
      std::tie(r, new_r) = std::make_pair(new_r, r - q * new_r);
    }
    return static_cast<uint64_t>(t < 0 ? t + n : t);
  }
  uint64_t n_;
  uint64_t offset_ = 0, multiplier_ = 1, inverse_ = 1;
};

// The distinct ids of one row with how often each was drawn (the term frequency). Open addressing
// with generation stamps: clearing between rows costs nothing, and the table stays in L1/L2.
class IdSet {
 public:
  void Reset(uint64_t max_size) {
    if (2 * max_size > keys_.size()) {
      size_t capacity = 16;
      while (capacity < 2 * max_size) capacity *= 2;
      keys_.assign(capacity, 0);
      counts_.assign(capacity, 0);
      stamps_.assign(capacity, 0);
      stamp_ = 0;
      mask_ = capacity - 1;
      shift_ = 64;
      for (; capacity > 1; capacity /= 2) --shift_;
    }
    if (++stamp_ == 0) {  // wrapped: stale stamps could look current
      std::fill(stamps_.begin(), stamps_.end(), 0);
      stamp_ = 1;
    }
    ids_.clear();
  }
  void Add(uint32_t id) {
    size_t slot = Slot(id);
    while (stamps_[slot] == stamp_) {
      if (keys_[slot] == id) {
        ++counts_[slot];
        return;
      }
      slot = (slot + 1) & mask_;
    }
    stamps_[slot] = stamp_;
    keys_[slot] = id;
    counts_[slot] = 1;
    ids_.push_back(id);
  }
  bool Contains(uint32_t id) const {
    size_t slot = Slot(id);
    while (stamps_[slot] == stamp_) {
      if (keys_[slot] == id) return true;
      slot = (slot + 1) & mask_;
    }
    return false;
  }
  uint32_t Count(uint32_t id) const {
    size_t slot = Slot(id);
    while (keys_[slot] != id || stamps_[slot] != stamp_) slot = (slot + 1) & mask_;
    return counts_[slot];
  }
  size_t size() const { return ids_.size(); }
  std::vector<uint32_t>& ids() { return ids_; }

 private:
  // Fibonacci hashing: the high bits of id * 2^64/phi spread consecutive ids over the table.
  size_t Slot(uint32_t id) const { return (id * 0x9e3779b97f4a7c15ULL) >> shift_; }

  std::vector<uint32_t> keys_, counts_, stamps_, ids_;
  uint32_t stamp_ = 0;
  size_t mask_ = 0;
  int shift_ = 64;
};

// Draws until `set` holds `target` distinct ids or the attempts run out (a small universe or a
// steep distribution can make the last distinct ids very unlikely).
template <class Draw>
void DrawDistinct(IdSet& set, uint64_t target, uint64_t attempts, Draw&& draw) {
  for (; set.size() < target && attempts > 0; --attempts) set.Add(static_cast<uint32_t>(draw()));
}

// Last resort that always terminates: walks the ids from a random start. target <= universe.
inline void FillByScan(IdSet& set, uint64_t target, uint64_t universe, Rng& rng) {
  for (uint64_t id = rng.Below(universe); set.size() < target; id = (id + 1) % universe) {
    if (!set.Contains(static_cast<uint32_t>(id))) set.Add(static_cast<uint32_t>(id));
  }
}

}  // namespace xmlt::data::synthetic
