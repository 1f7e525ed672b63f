// A whole file read into memory of its own, shared like a MappedFile (SharedArrays borrow from
// it), for data a run keeps using after it is read. A mapping shows whatever is written to the file
// later: a cache rewritten in place (`cp` over it) would change a running run's data, or kill it
// with SIGBUS where the new file is shorter. A copy is immune, and its checksum, checked once, holds
// for every byte the run will read.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>

namespace xmlt::data {

class FileCopy {
 public:
  // Throws InputError(path, 0, ...) when the file is missing, unreadable, not a regular file, or
  // changes size while it is read.
  static std::shared_ptr<const FileCopy> Read(const std::string& path);

  ~FileCopy();
  FileCopy(const FileCopy&) = delete;
  FileCopy& operator=(const FileCopy&) = delete;

  const char* data() const { return data_; }  // page-aligned
  size_t size() const { return size_; }

 private:
  FileCopy(char* data, size_t size) : data_(data), size_(size) {}
  char* data_ = nullptr;  // anonymous memory of its own (null for an empty file)
  size_t size_ = 0;
};

}  // namespace xmlt::data
