// Builds the header of a binary format in memory, in the layout ByteReader reads: fixed-size
// values in host (little-endian) layout, and raw bytes. The callers write the buffer out and hash
// it themselves, since what follows it (parameters, sections) is written without a copy.
#pragma once

#include <cstddef>
#include <string>
#include <type_traits>

static_assert(__BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__, "the binary formats are little-endian");

namespace xmlt::data {

class ByteWriter {
 public:
  // Appends a trivially copyable value as its sizeof(T) bytes: a uint32_t is 4 bytes, never an int.
  template <class T>
  void Append(const T& value) {
    static_assert(std::is_trivially_copyable_v<T>);
    AppendBytes(&value, sizeof(T));
  }
  void AppendBytes(const void* data, size_t size) { bytes_.append(static_cast<const char*>(data), size); }

  const char* data() const { return bytes_.data(); }
  size_t size() const { return bytes_.size(); }

 private:
  std::string bytes_;
};

}  // namespace xmlt::data
