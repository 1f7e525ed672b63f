// Locality-sensitive hash families over dense float vectors, for SLIDE's tables over the output
// layer (Chen et al., "SLIDE: In Defense of Smart Algorithms over Hardware Acceleration for
// Large-Scale Deep Learning Systems", MLSys 2020): vectors that are close (in angle for SimHash,
// in the ranking of their coordinates for DWTA) get equal codes more often than distant ones.
// A family holds K x L functions: table t's key is made of codes t*K .. t*K + K - 1.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>

namespace xmlt::kernels::lsh {

class HashFamily {
 public:
  virtual ~HashFamily() = default;
  // codes[0, K*L) for the vector v[0, dim). `query`: v is a hidden activation, whose zeros are
  // absent coordinates (DWTA ignores them; SimHash reads them as zeros either way).
  virtual void Hash(const float* v, bool query, uint32_t* codes) const = 0;
  // Hash(row, false) for `n` rows of `dim` floats each (row-major), codes row after row; a family
  // may do them together faster (SimHash: one matrix product).
  virtual void HashRows(const float* rows, size_t n, uint32_t* codes) const {
    for (size_t i = 0; i < n; ++i) Hash(rows + i * dim, false, codes + i * k * l);
  }
  virtual int bits_per_code() const = 0;  // each code is below 2^bits_per_code()
  size_t k = 0, l = 0, dim = 0;
};

// SimHash by sparse random projections, as SLIDE's: each function sums a random third of the
// coordinates with random signs and keeps the sign of the sum (1 bit). Seeded.
std::unique_ptr<HashFamily> MakeSimHash(size_t k, size_t l, size_t dim, uint64_t seed);

// Densified winner-take-all (Chen and Shrivastava, 2018), as SLIDE's: the coordinates, permuted,
// fall into bins of 8; a function's code is the position of its bin's largest coordinate (3 bits).
// A query's empty bin (all its coordinates zero) borrows the code of another bin, probed by a
// seeded hash of the function and the attempt (densification). Seeded.
std::unique_ptr<HashFamily> MakeDwtaHash(size_t k, size_t l, size_t dim, uint64_t seed);

// "simhash" or "dwta"; throws std::invalid_argument otherwise.
std::unique_ptr<HashFamily> MakeHashFamily(const std::string& name, size_t k, size_t l, size_t dim, uint64_t seed);

}  // namespace xmlt::kernels::lsh
