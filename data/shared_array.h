// A read-only array that either owns a std::vector or points into memory kept alive by someone
// else (a memory-mapped cache file), so datasets load from .xmlb without copying.
#pragma once

#include <cstddef>
#include <memory>
#include <vector>

namespace xmlt::data {

template <class T>
class SharedArray {
 public:
  SharedArray() = default;
  explicit SharedArray(std::vector<T>&& values) {
    auto owned = std::make_shared<std::vector<T>>(std::move(values));
    data_ = owned->data();
    size_ = owned->size();
    owner_ = std::move(owned);
  }
  // Borrows [data, data + size) for as long as `owner` lives.
  SharedArray(const T* data, size_t size, std::shared_ptr<const void> owner)
      : owner_(std::move(owner)), data_(data), size_(size) {}

  const T* data() const { return data_; }
  size_t size() const { return size_; }
  bool empty() const { return size_ == 0; }
  const T& operator[](size_t i) const { return data_[i]; }
  const T* begin() const { return data_; }
  const T* end() const { return data_ + size_; }

 private:
  std::shared_ptr<const void> owner_;
  const T* data_ = nullptr;
  size_t size_ = 0;
};

}  // namespace xmlt::data
