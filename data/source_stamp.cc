// StampSource; see source_stamp.h.
#include "data/source_stamp.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>
#include <xxhash.h>

#include <cerrno>
#include <cstring>
#include <vector>

#include "data/input_error.h"

namespace xmlt::data {
namespace {

constexpr uint64_t kEndBytes = uint64_t{1} << 20;  // hashed at each end of the file

class Descriptor {
 public:
  explicit Descriptor(int fd) : fd_(fd) {}
  ~Descriptor() {
    if (fd_ >= 0) ::close(fd_);
  }
  Descriptor(const Descriptor&) = delete;
  Descriptor& operator=(const Descriptor&) = delete;
  int get() const { return fd_; }

 private:
  int fd_;
};

void ReadAt(int fd, const std::string& path, char* buffer, uint64_t bytes, uint64_t offset) {
  while (bytes > 0) {
    const ssize_t got = ::pread(fd, buffer, bytes, static_cast<off_t>(offset));
    if (got < 0 && errno == EINTR) continue;
    if (got < 0) throw InputError(path, 0, std::string("cannot read: ") + std::strerror(errno));
    if (got == 0) throw InputError(path, 0, "changed size while it was read");
    buffer += got;
    offset += static_cast<uint64_t>(got);
    bytes -= static_cast<uint64_t>(got);
  }
}

}  // namespace

SourceStamp StampSource(const std::string& path) {
  // O_NONBLOCK so that a FIFO is refused below instead of waiting for a writer.
  const Descriptor fd(::open(path.c_str(), O_RDONLY | O_CLOEXEC | O_NONBLOCK));
  if (fd.get() < 0) throw InputError(path, 0, std::string("cannot open: ") + std::strerror(errno));
  struct stat info {};
  if (::fstat(fd.get(), &info) != 0) {
    throw InputError(path, 0, std::string("cannot stat: ") + std::strerror(errno));
  }
  if (!S_ISREG(info.st_mode)) throw InputError(path, 0, "not a regular file");

  SourceStamp stamp;
  stamp.bytes = static_cast<uint64_t>(info.st_size);
  stamp.mtime_ns = static_cast<int64_t>(info.st_mtim.tv_sec) * 1000000000 + info.st_mtim.tv_nsec;
  const uint64_t head = std::min(stamp.bytes, kEndBytes);
  const uint64_t tail = std::min(stamp.bytes - head, kEndBytes);
  std::vector<char> buffer(head + tail);
  ReadAt(fd.get(), path, buffer.data(), head, 0);
  ReadAt(fd.get(), path, buffer.data() + head, tail, stamp.bytes - tail);
  stamp.content = XXH3_64bits_withSeed(buffer.data(), buffer.size(), stamp.bytes);
  return stamp;
}

}  // namespace xmlt::data
