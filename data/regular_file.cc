// Opening data files; see regular_file.h.
#include "data/regular_file.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include "data/input_error.h"

namespace xmlt::data {

int OpenRegularFile(const std::string& path, size_t* size) {
  // O_NONBLOCK: opening a FIFO for reading would otherwise wait for a writer forever, before the
  // check below could refuse it. It changes nothing for a regular file.
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC | O_NONBLOCK);
  if (fd < 0) throw InputError(path, 0, std::string("cannot open: ") + std::strerror(errno));
  struct stat info {};
  if (::fstat(fd, &info) != 0) {
    const int error = errno;
    ::close(fd);
    throw InputError(path, 0, std::string("cannot stat: ") + std::strerror(error));
  }
  if (!S_ISREG(info.st_mode)) {
    ::close(fd);
    throw InputError(path, 0, "not a regular file");
  }
  *size = static_cast<size_t>(info.st_size);
  return fd;
}

}  // namespace xmlt::data
