// Writes a file so that readers see either the old content or the complete new one: data goes to
// a temporary file beside the target, is flushed to disk, and is renamed over the target on Commit.
// A symlinked target is followed; a character device or FIFO is written into directly and never
// replaced; other kinds of node are refused (output_target.h).
#pragma once

#include <cstdio>
#include <string>

namespace xmlt::data {

class AtomicFile {
 public:
  // Throws std::invalid_argument for a path that cannot be an output, std::runtime_error if the
  // file can't be opened.
  explicit AtomicFile(std::string path);
  ~AtomicFile();                          // without Commit, removes the temporary file
  AtomicFile(const AtomicFile&) = delete;
  AtomicFile& operator=(const AtomicFile&) = delete;

  void Write(const void* data, size_t bytes);
  void Write(const std::string& text) { Write(text.data(), text.size()); }
  std::FILE* stream() { return file_; }  // for fprintf-style writers; Commit checks its errors
  void Commit();  // flush, fsync, rename (a stream: flush and close); throws on any I/O error

  const std::string& path() const { return path_; }
  // The temporary name a write to `path` uses in this process (no other output may have it).
  static std::string TempPathFor(const std::string& path);

 private:
  std::string path_;         // as given
  std::string target_path_;  // the file renamed over: path_, or where its symlinks lead
  std::string temp_path_;  // the file written; the target itself when it is a stream
  bool stream_ = false;
  std::FILE* file_ = nullptr;
};

}  // namespace xmlt::data
