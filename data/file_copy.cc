// Whole-file copies; see file_copy.h.
#include "data/file_copy.h"

#include <fcntl.h>
#include <sys/mman.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include "data/input_error.h"
#include "data/regular_file.h"

namespace xmlt::data {

std::shared_ptr<const FileCopy> FileCopy::Read(const std::string& path) {
  size_t size = 0;
  const int fd = OpenRegularFile(path, &size);
  if (size == 0) {
    ::close(fd);
    return std::shared_ptr<const FileCopy>(new FileCopy(nullptr, 0));
  }
  // Anonymous memory in huge pages where the kernel gives them (asked before the first touch):
  // read() into 4 KiB heap pages faulted once per page and loaded at a fifth of the rate of
  // mapping the file; this loads at about 0.6 of it (docs/BENCHMARKS.md).
  void* memory = ::mmap(nullptr, size, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  if (memory == MAP_FAILED) {
    const int error = errno;
    ::close(fd);
    throw InputError(path, 0, std::string("cannot allocate memory for it: ") + std::strerror(error));
  }
  ::madvise(memory, size, MADV_HUGEPAGE);
  char* out = static_cast<char*>(memory);
  size_t done = 0;
  while (done < size) {
    const ssize_t got = ::read(fd, out + done, size - done);
    if (got < 0 && errno == EINTR) continue;
    if (got <= 0) {
      const int error = got < 0 ? errno : 0;
      ::close(fd);
      ::munmap(memory, size);
      throw InputError(path, 0, error != 0 ? std::string("read failed: ") + std::strerror(error)
                                           : "became shorter while it was read");
    }
    done += size_t(got);
  }
  ::close(fd);
  return std::shared_ptr<const FileCopy>(new FileCopy(out, size));
}

FileCopy::~FileCopy() {
  if (data_ != nullptr) ::munmap(data_, size_);
}

}  // namespace xmlt::data
