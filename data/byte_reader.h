// A bounds-checked cursor over bytes in memory, shared by the binary formats (model file,
// checkpoint, .xmlb cache header). Fields are fixed-size values in host layout, which is the
// little-endian file layout on every machine xmltrain runs on (x86-64, aarch64).
#pragma once

#include <cstddef>
#include <cstdint>
#include <cstring>
#include <string>
#include <type_traits>
#include <utility>

static_assert(__BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__, "the binary formats are little-endian");

namespace xmlt::data {

class ByteReader {
 public:
  // Reads [data, data + size). `file` and `kind` ("model file", "checkpoint") name the bytes in
  // errors. Nothing is copied: the bytes must outlive the reader and the pointers it returns.
  ByteReader(const char* data, size_t size, std::string file, std::string kind)
      : data_(data), end_(size), file_(std::move(file)), kind_(std::move(kind)) {}

  // The next `count` bytes; throws InputError naming the file and `what` when fewer remain.
  // `count` is 64-bit because it often comes straight from the file; it is only compared with
  // what remains, never added to the offset before the check, so no size can wrap around.
  const char* ReadBytes(uint64_t count, const char* what) {
    if (count > remaining()) TooShort(count, what);
    const char* at = data_ + pos_;
    pos_ += size_t(count);
    return at;
  }

  // The next value of a trivially copyable T (an integer, a float, a plain struct).
  template <class T>
  T Read(const char* what) {
    static_assert(std::is_trivially_copyable_v<T>);
    T value;
    std::memcpy(&value, ReadBytes(sizeof(T), what), sizeof(T));
    return value;
  }

  // The last value of the range, which then ends before it: for a trailing checksum that must be
  // known before the fields ahead of it are trusted.
  template <class T>
  T ReadLast(const char* what) {
    static_assert(std::is_trivially_copyable_v<T>);
    if (sizeof(T) > remaining()) TooShort(sizeof(T), what);
    end_ -= sizeof(T);
    T value;
    std::memcpy(&value, data_ + end_, sizeof(T));
    return value;
  }

  size_t offset() const { return pos_; }  // from the start of the range
  size_t remaining() const { return end_ - pos_; }

 private:
  [[noreturn]] void TooShort(uint64_t count, const char* what) const;

  const char* data_;
  size_t pos_ = 0, end_;  // pos_ <= end_ always
  std::string file_, kind_;
};

}  // namespace xmlt::data
