// What a binary cache remembers of the text it was made from: the size, the modification time and
// a hash of the first and last MiB. The cache is used only when all three still match, so a text
// replaced by another (even one with an older time, as `cp -p` and `rsync -t` leave) is parsed
// again, while checking costs two small reads rather than a pass over a file of gigabytes.
#pragma once

#include <cstdint>
#include <string>

namespace xmlt::data {

struct SourceStamp {
  uint64_t bytes = 0;
  int64_t mtime_ns = 0;   // nanoseconds since the epoch
  uint64_t content = 0;   // XXH3-64 of the head and tail (the whole file up to 2 MiB), with the size
  bool operator==(const SourceStamp& other) const {
    return bytes == other.bytes && mtime_ns == other.mtime_ns && content == other.content;
  }
  bool operator!=(const SourceStamp& other) const { return !(*this == other); }
  bool empty() const { return *this == SourceStamp{}; }  // a cache not made from a text file
};

// Throws InputError(path, 0, ...) when the file cannot be opened or is not a regular file.
SourceStamp StampSource(const std::string& path);

}  // namespace xmlt::data
