// A read-only memory mapping of a whole file, owned by a shared_ptr so that SharedArrays can borrow
// from it (binary cache) and parsers can read text without copying it.
#pragma once

#include <cstddef>
#include <memory>
#include <string>
#include <string_view>

namespace xmlt::data {

class MappedFile {
 public:
  // Throws InputError(path, 0, ...) when the file is missing, unreadable or not a regular file.
  // `populate` pre-faults the pages (worth it when every byte will be read, as for the cache).
  static std::shared_ptr<const MappedFile> Open(const std::string& path, bool populate = false);

  ~MappedFile();
  MappedFile(const MappedFile&) = delete;
  MappedFile& operator=(const MappedFile&) = delete;

  const char* data() const { return data_; }
  size_t size() const { return size_; }
  std::string_view view() const { return {data_, size_}; }

 private:
  MappedFile(const char* data, size_t size) : data_(data), size_(size) {}
  const char* data_ = nullptr;  // null for an empty file: mmap cannot map zero bytes
  size_t size_ = 0;
};

}  // namespace xmlt::data
