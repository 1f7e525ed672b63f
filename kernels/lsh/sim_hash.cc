// SimHash by sparse random projections; see hash_family.h.
#include <algorithm>
#include <numeric>
#include <random>
#include <stdexcept>
#include <vector>

#include "kernels/lsh/hash_family.h"

namespace xmlt::kernels::lsh {
namespace {

// SLIDE's ratio: each projection reads a third of the coordinates.
constexpr size_t kSampleRatio = 3;

class SimHash final : public HashFamily {
 public:
  SimHash(size_t k_, size_t l_, size_t dim_, uint64_t seed) {
    k = k_, l = l_, dim = dim_;
    const size_t functions = k * l;
    sample_ = std::max<size_t>(1, (dim + kSampleRatio - 1) / kSampleRatio);
    index_.resize(functions * sample_);
    sign_.resize(functions * sample_);
    std::mt19937_64 rng(seed);
    std::vector<uint32_t> order(dim);
    std::iota(order.begin(), order.end(), 0u);
    for (size_t f = 0; f < functions; ++f) {
      std::shuffle(order.begin(), order.end(), rng);
      std::sort(order.begin(), order.begin() + int64_t(sample_));  // reads in memory order
      for (size_t j = 0; j < sample_; ++j) {
        index_[f * sample_ + j] = order[j];
        sign_[f * sample_ + j] = (rng() & 1) ? 1.0f : -1.0f;
      }
    }
  }

  void Hash(const float* v, bool, uint32_t* codes) const override {
    for (size_t f = 0; f < k * l; ++f) {
      const uint32_t* index = index_.data() + f * sample_;
      const float* sign = sign_.data() + f * sample_;
      float sum = 0.0f;
      for (size_t j = 0; j < sample_; ++j) sum += sign[j] * v[index[j]];
      codes[f] = sum >= 0.0f ? 0u : 1u;
    }
  }
  int bits_per_code() const override { return 1; }

 private:
  size_t sample_ = 0;
  std::vector<uint32_t> index_;  // per function, `sample_` coordinates
  std::vector<float> sign_;
};

}  // namespace

std::unique_ptr<HashFamily> MakeSimHash(size_t k, size_t l, size_t dim, uint64_t seed) {
  if (k == 0 || l == 0 || dim == 0) throw std::invalid_argument("SimHash: K, L and the dimension must be positive");
  return std::make_unique<SimHash>(k, l, dim, seed);
}

}  // namespace xmlt::kernels::lsh
