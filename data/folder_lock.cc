// Folder locks; see folder_lock.h.
#include "data/folder_lock.h"

#include <fcntl.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <stdexcept>

namespace xmlt::data {

std::string FolderLock::PathIn(const std::string& folder) { return folder + "/lock"; }

FolderLock::FolderLock(const std::string& folder) {
  if (::mkdir(folder.c_str(), 0777) != 0 && errno != EEXIST)
    throw std::runtime_error(folder + ": cannot create the folder: " + std::strerror(errno));
  const std::string path = PathIn(folder);
  fd_ = ::open(path.c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0644);
  if (fd_ < 0) throw std::runtime_error(path + ": cannot open the lock file: " + std::strerror(errno));
  if (::flock(fd_, LOCK_EX | LOCK_NB) != 0) {
    const int error = errno;
    char holder[256] = {};
    const ssize_t got = ::pread(fd_, holder, sizeof holder - 1, 0);
    ::close(fd_);
    fd_ = -1;
    if (error == EWOULDBLOCK) {
      std::string who = got > 0 ? std::string(holder, size_t(got)) : std::string("another process");
      while (!who.empty() && (who.back() == '\n' || who.back() == ' ')) who.pop_back();
      throw std::runtime_error(folder + " is in use by another run (" + who +
                               "); give each run its own folder");
    }
    throw std::runtime_error(path + ": cannot lock: " + std::strerror(error));
  }
  char host[128] = "unknown host";
  ::gethostname(host, sizeof host - 1);
  const std::string text = "pid " + std::to_string(::getpid()) + " on " + host + "\n";
  if (::ftruncate(fd_, 0) == 0) {
    const ssize_t written = ::pwrite(fd_, text.data(), text.size(), 0);
    (void)written;  // the name is for messages only; the lock is what matters
  }
}

FolderLock::~FolderLock() {
  if (fd_ >= 0) ::close(fd_);  // releases the lock
}

}  // namespace xmlt::data
