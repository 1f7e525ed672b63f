// An exclusive lock on a folder, held while a run writes into it (two runs on one
// --checkpoint-dir would delete each other's temporary files and overwrite each other's
// checkpoints). flock() on FOLDER/lock: the kernel drops it when the holder exits, however it
// exits, so a lock left by a dead process is taken over without any guessing; the file names the
// holder (pid and host) for the message a second run gets.
#pragma once

#include <string>

namespace xmlt::data {

class FolderLock {
 public:
  // Creates the folder if missing (its parent must exist). Throws std::runtime_error naming the
  // folder and the holder when another process holds the lock, or when it cannot be taken.
  explicit FolderLock(const std::string& folder);
  static std::string PathIn(const std::string& folder);  // the lock file: FOLDER/lock
  ~FolderLock();
  FolderLock(const FolderLock&) = delete;
  FolderLock& operator=(const FolderLock&) = delete;

 private:
  int fd_ = -1;
};

}  // namespace xmlt::data
