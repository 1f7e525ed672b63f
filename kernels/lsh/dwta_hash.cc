// Densified winner-take-all hashing; see hash_family.h.
#include <algorithm>
#include <cmath>
#include <numeric>
#include <random>
#include <stdexcept>
#include <vector>

#include "kernels/cpu/cpu_isa.h"
#include "kernels/lsh/hash_family.h"

namespace xmlt::kernels::lsh {
namespace {

constexpr uint32_t kBinSize = 8;  // SLIDE's: codes of 3 bits
constexpr int kMaxProbes = 100;   // densification attempts before an empty bin gives code 0

class DwtaHash final : public HashFamily {
 public:
  DwtaHash(size_t k_, size_t l_, size_t dim_, uint64_t seed) {
    k = k_, l = l_, dim = dim_;
    const size_t functions = k * l;
    // Enough permutations of the coordinates to fill every function's bin: the j-th place of
    // permutation p is slot p * dim + j, and function f's bin is slots 8f .. 8f + 7.
    const size_t permutations = (functions * kBinSize + dim - 1) / dim;
    stride_ = (functions + cpu::kDwtaChunk - 1) / cpu::kDwtaChunk * cpu::kDwtaChunk;  // the padding reads coordinate 0
    coordinate_.assign(stride_ * kBinSize, 0);
    std::mt19937_64 rng(seed);
    std::vector<uint32_t> order(dim);
    for (size_t p = 0; p < permutations; ++p) {
      std::iota(order.begin(), order.end(), 0u);
      std::shuffle(order.begin(), order.end(), rng);
      for (size_t j = 0; j < dim; ++j) {
        const size_t slot = p * dim + j;  // function slot / 8, position slot % 8
        if (slot < functions * kBinSize) coordinate_[(slot % kBinSize) * stride_ + slot / kBinSize] = order[j];
      }
    }
    probe_seed_ = rng();
  }

  void Hash(const float* v, bool query, uint32_t* codes) const override {
    const size_t functions = k * l;
    // The position of each bin's largest coordinate, the first of equals; a query's zeros are
    // absent coordinates. The vector kernels of the CPU's ISA (gathers across functions).
    cpu::Vec().dwta_codes(v, coordinate_.data(), stride_, functions, kBinSize, query, codes);
    // Densification only where a bin came out empty: a query's, seldom a weight row's.
    uint32_t empties = 0;
    for (size_t f = 0; f < functions; ++f) empties += codes[f] == kBinSize;
    if (empties == 0) return;
    thread_local std::vector<uint8_t> empty;
    empty.resize(functions);
    bool any = false;
    for (size_t f = 0; f < functions; ++f) {
      empty[f] = codes[f] == kBinSize;
      any = any || !empty[f];
    }
    // Densification: an empty bin takes the code of the first non-empty bin its probes reach.
    for (size_t f = 0; f < functions; ++f) {
      if (!empty[f]) continue;
      uint32_t code = 0;
      for (int attempt = 1; any && attempt <= kMaxProbes; ++attempt) {
        const size_t other = Probe(f, attempt) % functions;
        if (!empty[other]) {
          code = codes[other];
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

  size_t stride_ = 0;                 // functions rounded up to whole chunks of cpu::kDwtaChunk
  std::vector<uint32_t> coordinate_;  // position-major: [position * stride_ + f], f's bin's coordinates
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
