// Writes a file so that readers see either the old content or the complete new one: data goes to
// a temporary file beside the target, is flushed to disk, and is renamed over the target on Commit.
#pragma once

#include <cstdio>
#include <string>

namespace xmlt::data {

class AtomicFile {
 public:
  explicit AtomicFile(std::string path);  // throws std::runtime_error if the temp file can't open
  ~AtomicFile();                          // without Commit, removes the temporary file
  AtomicFile(const AtomicFile&) = delete;
  AtomicFile& operator=(const AtomicFile&) = delete;

  void Write(const void* data, size_t bytes);
  void Write(const std::string& text) { Write(text.data(), text.size()); }
  std::FILE* stream() { return file_; }  // for fprintf-style writers; Commit checks its errors
  void Commit();  // flush, fsync, rename; throws on any I/O error

  const std::string& path() const { return path_; }

 private:
  std::string path_;
  std::string temp_path_;
  std::FILE* file_ = nullptr;
};

}  // namespace xmlt::data
