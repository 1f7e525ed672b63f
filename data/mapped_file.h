// A read-only memory mapping of a whole file, owned by a shared_ptr so that SharedArrays can borrow
// from it (binary cache) and parsers can read text without copying it.
//
// A mapped file that another program shortens while it is read would kill the process: reading a
// page past the new end raises SIGBUS. A handler installed with the first mapping turns such a
// fault inside a live mapping into a page of zeros and marks the mapping as faulted; the reader
// then sees a text that ends in NUL bytes (a parse error) or a corrupt archive, and the loader
// reports the file as changed while it was read (dataset_loader.cc). A SIGBUS anywhere else goes
// on to the handler that was there before, or kills the process as it would have.
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
  // A page of it was read after the file had been cut short there (and read as zeros).
  bool faulted() const;

 private:
  MappedFile(const char* data, size_t size, int guard) : data_(data), size_(size), guard_(guard) {}
  const char* data_ = nullptr;  // null for an empty file: mmap cannot map zero bytes
  size_t size_ = 0;
  int guard_ = -1;  // its slot in the SIGBUS handler's table; -1: none (empty, or the table full)
};

}  // namespace xmlt::data
