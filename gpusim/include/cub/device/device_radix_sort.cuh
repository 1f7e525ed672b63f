// cub::DeviceRadixSort::SortPairs on the simulated GPUs: the temp-storage query, then a stable
// least-significant-digit radix sort over bits [begin_bit, end_bit) in stream order, using the
// caller's temp storage as its second buffer as CUB does (gpusim/radix_sort.h).
#pragma once

#include <cuda_runtime.h>

#include "gpusim/radix_sort.h"

namespace cub {

struct DeviceRadixSort {
  template <typename KeyT, typename ValueT, typename NumItemsT>
  static cudaError_t SortPairs(void* d_temp_storage, size_t& temp_storage_bytes, const KeyT* d_keys_in,
                               KeyT* d_keys_out, const ValueT* d_values_in, ValueT* d_values_out, NumItemsT num_items,
                               int begin_bit = 0, int end_bit = sizeof(KeyT) * 8, cudaStream_t stream = 0) {
    return ::gpusim::SortPairs<KeyT, ValueT>(d_temp_storage, temp_storage_bytes, d_keys_in, d_keys_out, d_values_in,
                                             d_values_out, static_cast<long long>(num_items), begin_bit, end_bit,
                                             stream);
  }
};

}  // namespace cub
