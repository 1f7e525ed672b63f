// SimHash by sparse random projections; see hash_family.h.
#include <algorithm>
#include <numeric>
#include <random>
#include <stdexcept>
#include <vector>

#include "kernels/cpu/gemm.h"
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
    const size_t sample = std::max<size_t>(1, (dim + kSampleRatio - 1) / kSampleRatio);
    // Kept dense (functions x dim, mostly zeros): a row's codes are then one vectorized product,
    // and a block of rows one matrix product.
    projection_.assign(functions * dim, 0.0f);
    std::mt19937_64 rng(seed);
    std::vector<uint32_t> order(dim);
    std::iota(order.begin(), order.end(), 0u);
    for (size_t f = 0; f < functions; ++f) {
      std::shuffle(order.begin(), order.end(), rng);
      for (size_t j = 0; j < sample; ++j) projection_[f * dim + order[j]] = (rng() & 1) ? 1.0f : -1.0f;
    }
  }

  void Hash(const float* v, bool, uint32_t* codes) const override {
    for (size_t f = 0; f < k * l; ++f) {
      const float* p = projection_.data() + f * dim;
      float sum = 0.0f;
#pragma omp simd reduction(+ : sum)
      for (size_t j = 0; j < dim; ++j) sum += p[j] * v[j];
      codes[f] = sum >= 0.0f ? 0u : 1u;
    }
  }

  void HashRows(const float* rows, size_t n, uint32_t* codes) const override {
    const size_t functions = k * l;
    thread_local std::vector<float> sums;
    sums.resize(n * functions);
    // sums (n x functions) = rows (n x dim) x projection^T, on this thread (callers run blocks of
    // rows in parallel).
    cpu::GemmOneThread<float>(cpu::Op::kNone, cpu::Op::kTranspose, int64_t(n), int64_t(functions), int64_t(dim), 1.0f,
                              rows, int64_t(dim), projection_.data(), int64_t(dim), 0.0f, sums.data(),
                              int64_t(functions));
    for (size_t i = 0; i < n * functions; ++i) codes[i] = sums[i] >= 0.0f ? 0u : 1u;
  }
  int bits_per_code() const override { return 1; }

 private:
  std::vector<float> projection_;  // functions x dim: +1, -1 on a random third of the coordinates, 0 elsewhere
};

}  // namespace

std::unique_ptr<HashFamily> MakeSimHash(size_t k, size_t l, size_t dim, uint64_t seed) {
  if (k == 0 || l == 0 || dim == 0) throw std::invalid_argument("SimHash: K, L and the dimension must be positive");
  return std::make_unique<SimHash>(k, l, dim, seed);
}

}  // namespace xmlt::kernels::lsh
