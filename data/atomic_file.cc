// Temp-file-and-rename writer; see atomic_file.h.
#include "data/atomic_file.h"

#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <stdexcept>

#include "data/output_target.h"

namespace xmlt::data {
namespace {
std::runtime_error IoError(const std::string& what, const std::string& path) {
  return std::runtime_error(path + ": " + what + ": " + std::strerror(errno));
}
}  // namespace

std::string AtomicFile::TempPathFor(const std::string& path) { return path + ".tmp." + std::to_string(::getpid()); }

AtomicFile::AtomicFile(std::string path) : path_(std::move(path)) {
  const OutputTarget target = ResolveOutputTarget(path_);
  stream_ = target.stream;
  temp_path_ = stream_ ? target.path : TempPathFor(target.path);
  target_path_ = target.path;
  file_ = std::fopen(temp_path_.c_str(), "wb");
  if (file_ == nullptr) throw IoError(stream_ ? "cannot open" : "cannot create", temp_path_);
}

AtomicFile::~AtomicFile() {
  if (file_ != nullptr) {
    std::fclose(file_);
    if (!stream_) std::remove(temp_path_.c_str());
  }
}

void AtomicFile::Write(const void* data, size_t bytes) {
  if (bytes != 0 && std::fwrite(data, 1, bytes, file_) != bytes) throw IoError("write failed", temp_path_);
}

void AtomicFile::Commit() {
  if (std::fflush(file_) != 0 || std::ferror(file_) != 0) throw IoError("write failed", temp_path_);
  // A device or pipe has nothing to sync (fsync says EINVAL) and nothing to rename.
  if (!stream_ && ::fsync(::fileno(file_)) != 0) throw IoError("fsync failed", temp_path_);
  const int close_status = std::fclose(file_);
  file_ = nullptr;
  if (close_status != 0) {
    if (!stream_) std::remove(temp_path_.c_str());
    throw IoError("close failed", temp_path_);
  }
  if (stream_) return;
  if (std::rename(temp_path_.c_str(), target_path_.c_str()) != 0) {
    const auto error = IoError("cannot rename to " + target_path_, temp_path_);
    std::remove(temp_path_.c_str());
    throw error;
  }
}

}  // namespace xmlt::data
