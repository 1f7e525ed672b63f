// Output paths classified before writing; see output_target.h.
#include "data/output_target.h"

#include <sys/stat.h>

#include <cerrno>
#include <cstring>
#include <filesystem>
#include <stdexcept>

namespace xmlt::data {
namespace {

namespace fs = std::filesystem;

std::string KindOf(mode_t mode) {
  if (S_ISDIR(mode)) return "a folder";
  if (S_ISBLK(mode)) return "a block device";
  if (S_ISSOCK(mode)) return "a socket";
  return "not a regular file, character device or FIFO";
}

}  // namespace

OutputTarget ResolveOutputTarget(const std::string& path) {
  struct stat link {};
  if (::lstat(path.c_str(), &link) != 0) {
    if (errno == ENOENT) return {path, false};  // a new file
    throw std::invalid_argument(path + ": cannot be examined as an output: " + std::strerror(errno));
  }
  OutputTarget target{path, false};
  struct stat node = link;
  if (S_ISLNK(link.st_mode)) {
    if (::stat(path.c_str(), &node) != 0) {
      if (errno == ENOENT) {
        // A dangling link: followed, the file would appear wherever the link points, which the
        // user may not expect; replaced, the link would be lost. Neither: say so.
        throw std::invalid_argument(path + " is a symlink to nothing (" + fs::read_symlink(path).string() +
                                    "): give the file itself, or remove the link");
      }
      throw std::invalid_argument(path + " is a symlink that cannot be followed: " + std::strerror(errno));
    }
  }
  // A stream is opened by the name given (/dev/stdout leads to a pipe that has no name to open).
  if (S_ISCHR(node.st_mode) || S_ISFIFO(node.st_mode)) return {path, true};
  if (S_ISREG(node.st_mode)) {
    if (S_ISLNK(link.st_mode)) {
      std::error_code error;
      target.path = fs::canonical(path, error).string();
      if (error) throw std::invalid_argument(path + " is a symlink that cannot be resolved: " + error.message());
    }
    return target;
  }
  throw std::invalid_argument(path + " is " + KindOf(node.st_mode) + ": it cannot be an output");
}

}  // namespace xmlt::data
