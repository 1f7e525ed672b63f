// What an output path names, decided before anything is written to it:
// - a regular file, or nothing yet: written beside it and renamed over it (atomic_file.h);
// - a symlink to either: followed, so the file it points to is replaced and the link stays;
// - a character device or a FIFO (/dev/null, /dev/stdout, a pipe a reader waits on): written into
//   directly, with no temporary file and no rename, so that the node is never replaced;
// - anything else (a folder, a block device, a socket, a symlink to nothing or in a loop): refused.
#pragma once

#include <string>

namespace xmlt::data {

struct OutputTarget {
  std::string path;     // where the bytes go: the given path, or the file its symlinks lead to
  bool stream = false;  // a character device or FIFO: written in place, never renamed over
};

// Throws std::invalid_argument naming `path` and what it is when it cannot be an output.
OutputTarget ResolveOutputTarget(const std::string& path);

}  // namespace xmlt::data
