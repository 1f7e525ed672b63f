// RAII read-only mmap; see mapped_file.h.
#include "data/mapped_file.h"

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include "data/input_error.h"

namespace xmlt::data {

std::shared_ptr<const MappedFile> MappedFile::Open(const std::string& path, bool populate) {
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
  const size_t size = static_cast<size_t>(info.st_size);
  if (size == 0) {
    ::close(fd);
    return std::shared_ptr<const MappedFile>(new MappedFile(nullptr, 0));
  }
  const int flags = MAP_PRIVATE | (populate ? MAP_POPULATE : 0);
  void* address = ::mmap(nullptr, size, PROT_READ, flags, fd, 0);
  const int error = errno;
  ::close(fd);  // the mapping stays valid without the descriptor
  if (address == MAP_FAILED) {
    throw InputError(path, 0, std::string("cannot map: ") + std::strerror(error));
  }
  if (!populate) ::madvise(address, size, MADV_WILLNEED);
  return std::shared_ptr<const MappedFile>(new MappedFile(static_cast<const char*>(address), size));
}

MappedFile::~MappedFile() {
  if (data_ != nullptr) ::munmap(const_cast<char*>(data_), size_);
}

}  // namespace xmlt::data
