// One run at a time per checkpoint folder (reliability, second round, row 2): a second lock is
// refused naming the holder, and a lock whose holder died is taken over.
#include "data/folder_lock.h"

#include <gtest/gtest.h>
#include <sys/wait.h>
#include <unistd.h>

#include <memory>
#include <stdexcept>
#include <string>

#include "tests/test_support.h"

namespace xmlt::data {
namespace {

TEST(FolderLock, ASecondHolderIsRefusedNamingTheFirst) {
  const testing::TempDir dir;
  const std::string folder = dir.File("checkpoints");  // created by the lock
  auto first = std::make_unique<FolderLock>(folder);
  try {
    FolderLock second(folder);
    ADD_FAILURE() << "two locks on one folder";
  } catch (const std::runtime_error& e) {
    const std::string what = e.what();
    EXPECT_NE(what.find("in use by another run (pid " + std::to_string(::getpid())), std::string::npos) << what;
  }
  first.reset();
  EXPECT_NO_THROW(FolderLock again(folder));
}

TEST(FolderLock, ALockLeftByADeadProcessIsTakenOver) {
  const testing::TempDir dir;
  const std::string folder = dir.File("checkpoints");
  const pid_t child = ::fork();
  ASSERT_GE(child, 0);
  if (child == 0) {
    FolderLock held(folder);
    ::_exit(0);  // no destructor: the process dies holding the lock
  }
  int status = 0;
  ASSERT_EQ(::waitpid(child, &status, 0), child);
  ASSERT_TRUE(WIFEXITED(status));
  EXPECT_NO_THROW(FolderLock mine(folder));
}

TEST(FolderLock, AFolderThatCannotBeMadeIsAnError) {
  const testing::TempDir dir;
  testing::WriteFile(dir.File("a-file"), "x");
  EXPECT_THROW(FolderLock(dir.File("a-file/sub")), std::runtime_error);
}

}  // namespace
}  // namespace xmlt::data
