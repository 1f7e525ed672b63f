// The stable radix sort behind cub::DeviceRadixSort::SortPairs (include/cub/device/...).
#pragma once

#include <cstddef>
#include <cstring>
#include <functional>
#include <string>
#include <type_traits>
#include <vector>

#include "gpusim/device_memory.h"
#include "gpusim/error_codes.h"

struct CUstream_st;

namespace gpusim {
namespace detail {

constexpr size_t kSortAlign = 256;
inline size_t AlignSort(size_t bytes) { return (bytes + kSortAlign - 1) / kSortAlign * kSortAlign; }

// Checks the pointers and enqueues `work` on the stream as a launch (counted, and able to fault);
// `ranges` lists each device range the sort touches.
cudaError_t SubmitSort(CUstream_st* stream, const std::vector<std::pair<const void*, size_t>>& ranges,
                       std::function<void()> work);

}  // namespace detail

template <typename KeyT, typename ValueT>
cudaError_t SortPairs(void* temp, size_t& temp_bytes, const KeyT* keys_in, KeyT* keys_out, const ValueT* values_in,
                      ValueT* values_out, long long items, int begin_bit, int end_bit, CUstream_st* stream) {
  static_assert(std::is_unsigned_v<KeyT>, "the simulated radix sort takes unsigned keys");
  if (items < 0 || begin_bit < 0 || end_bit > int(sizeof(KeyT) * 8) || begin_bit > end_bit) return cudaErrorInvalidValue;
  const size_t n = size_t(items);
  // A second buffer for the keys and one for the values, plus a little, as CUB asks.
  const size_t needed = detail::AlignSort(n * sizeof(KeyT)) + detail::AlignSort(n * sizeof(ValueT)) + detail::kSortAlign;
  if (temp == nullptr) {
    temp_bytes = needed;
    return cudaSuccess;
  }
  if (temp_bytes < needed) return cudaErrorInvalidValue;
  if (n == 0) return cudaSuccess;
  const std::vector<std::pair<const void*, size_t>> ranges = {
      {keys_in, n * sizeof(KeyT)},     {keys_out, n * sizeof(KeyT)}, {values_in, n * sizeof(ValueT)},
      {values_out, n * sizeof(ValueT)}, {temp, needed}};
  return detail::SubmitSort(stream, ranges, [=] {
    KeyT* keys_alt = static_cast<KeyT*>(temp);
    ValueT* values_alt = reinterpret_cast<ValueT*>(static_cast<unsigned char*>(temp) + detail::AlignSort(n * sizeof(KeyT)));
    std::memcpy(keys_out, keys_in, n * sizeof(KeyT));
    std::memcpy(values_out, values_in, n * sizeof(ValueT));
    KeyT *keys = keys_out, *keys_next = keys_alt;
    ValueT *values = values_out, *values_next = values_alt;
    constexpr int kDigitBits = 8;
    std::vector<size_t> start(size_t(1) << kDigitBits);
    for (int bit = begin_bit; bit < end_bit; bit += kDigitBits) {
      const int width = end_bit - bit < kDigitBits ? end_bit - bit : kDigitBits;
      const KeyT mask = KeyT((KeyT(1) << width) - 1);
      std::fill(start.begin(), start.end(), 0);
      for (size_t i = 0; i < n; ++i) ++start[(keys[i] >> bit) & mask];
      size_t sum = 0;
      for (size_t& s : start) {
        const size_t count = s;
        s = sum;
        sum += count;
      }
      for (size_t i = 0; i < n; ++i) {
        const size_t to = start[(keys[i] >> bit) & mask]++;
        keys_next[to] = keys[i];
        values_next[to] = values[i];
      }
      std::swap(keys, keys_next);
      std::swap(values, values_next);
    }
    if (keys != keys_out) {
      std::memcpy(keys_out, keys, n * sizeof(KeyT));
      std::memcpy(values_out, values, n * sizeof(ValueT));
    }
    detail::MarkDeviceWritten(keys_out, n * sizeof(KeyT));
    detail::MarkDeviceWritten(values_out, n * sizeof(ValueT));
    detail::MarkDeviceWritten(temp, needed);
  });
}

}  // namespace gpusim
