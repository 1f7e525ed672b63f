// Densified winner-take-all hashing; see hash_family.h.
#include <algorithm>
#include <cmath>
#include <numeric>
#include <random>
#include <stdexcept>
#include <vector>

#include "kernels/lsh/hash_family.h"

namespace xmlt::kernels::lsh {
namespace {

constexpr uint32_t kBinSize = 8;  // SLIDE's: codes of 3 bits
constexpr int kMaxProbes = 100;   // densification attempts before an empty bin gives code 0
constexpr uint32_t kNoBin = 0xffffffffu;

class DwtaHash final : public HashFamily {
 public:
  DwtaHash(size_t k_, size_t l_, size_t dim_, uint64_t seed) {
    k = k_, l = l_, dim = dim_;
    const size_t functions = k * l;
    // Enough permutations of the coordinates to fill every function's bin.
    const size_t permutations = (functions * kBinSize + dim - 1) / dim;
    bin_.assign(permutations * dim, kNoBin);
    position_.assign(permutations * dim, 0);
    std::mt19937_64 rng(seed);
    std::vector<uint32_t> order(dim);
    for (size_t p = 0; p < permutations; ++p) {
      std::iota(order.begin(), order.end(), 0u);
      std::shuffle(order.begin(), order.end(), rng);
      for (size_t j = 0; j < dim; ++j) {
        const size_t slot = p * dim + j;  // the j-th place of permutation p
        if (slot / kBinSize < functions) {
          bin_[p * dim + order[j]] = uint32_t(slot / kBinSize);
          position_[p * dim + order[j]] = uint8_t(slot % kBinSize);
        }
      }
    }
    probe_seed_ = rng();
  }

  void Hash(const float* v, bool query, uint32_t* codes) const override {
    const size_t functions = k * l;
    thread_local std::vector<float> best;
    best.assign(functions, -INFINITY);
    std::fill(codes, codes + functions, kNoBin);
    const size_t permutations = bin_.size() / dim;
    for (size_t p = 0; p < permutations; ++p) {
      const uint32_t* bin = bin_.data() + p * dim;
      const uint8_t* position = position_.data() + p * dim;
      for (size_t i = 0; i < dim; ++i) {
        const float x = v[i];
        if ((query && x == 0.0f) || bin[i] == kNoBin) continue;
        if (x > best[bin[i]]) {
          best[bin[i]] = x;
          codes[bin[i]] = position[i];
        }
      }
    }
    // Densification: an empty bin takes the code of the first non-empty bin its probes reach.
    for (size_t f = 0; f < functions; ++f) {
      if (codes[f] != kNoBin && codes[f] < kBinSize) continue;
      uint32_t code = 0;
      for (int attempt = 1; attempt <= kMaxProbes; ++attempt) {
        const size_t other = Probe(f, attempt) % functions;
        if (best[other] != -INFINITY) {
          code = codes[other] < kBinSize ? codes[other] : 0;
          break;
        }
      }
      codes[f] = code;
    }
  }
  int bits_per_code() const override { return 3; }

 private:
  uint64_t Probe(size_t function, int attempt) const {
    uint64_t x = probe_seed_ ^ (uint64_t(function) * 0x9E3779B97F4A7C15ull) ^ (uint64_t(attempt) << 32);
    x ^= x >> 31;
    x *= 0xBF58476D1CE4E5B9ull;
    x ^= x >> 29;
    return x;
  }

  std::vector<uint32_t> bin_;     // per permutation and coordinate: the function whose bin it falls in
  std::vector<uint8_t> position_;  // and its place there
  uint64_t probe_seed_ = 0;
};

}  // namespace

std::unique_ptr<HashFamily> MakeDwtaHash(size_t k, size_t l, size_t dim, uint64_t seed) {
  if (k == 0 || l == 0 || dim == 0) throw std::invalid_argument("DWTA: K, L and the dimension must be positive");
  return std::make_unique<DwtaHash>(k, l, dim, seed);
}

std::unique_ptr<HashFamily> MakeHashFamily(const std::string& name, size_t k, size_t l, size_t dim, uint64_t seed) {
  if (name == "simhash") return MakeSimHash(k, l, dim, seed);
  if (name == "dwta") return MakeDwtaHash(k, l, dim, seed);
  throw std::invalid_argument("hash family must be simhash or dwta, not '" + name + "'");
}

}  // namespace xmlt::kernels::lsh
