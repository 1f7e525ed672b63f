// Issue: reliability, fourth round, row 1. Outputs that are not regular files: a device node or a
// FIFO is written into and never replaced (the atomic rename made /dev/null a regular file, run as
// root), a symlink is followed, and the other kinds of node are refused naming what they are.
#include "data/output_target.h"

#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include <gtest/gtest.h>

#include <cstring>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <stdexcept>
#include <string>
#include <thread>

#include "data/atomic_file.h"
#include "tests/test_support.h"

namespace xmlt::data {
namespace {

namespace fs = std::filesystem;

std::string Refusal(const std::string& path) {
  try {
    ResolveOutputTarget(path);
  } catch (const std::invalid_argument& e) {
    return e.what();
  }
  return "";
}

// What a reader of a FIFO receives while `write` writes into it.
template <class Write>
std::string ThroughFifo(const std::string& fifo, Write write) {
  std::string received;
  std::thread reader([&] {
    std::ifstream in(fifo, std::ios::binary);
    received.assign(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
  });
  write();
  reader.join();
  return received;
}

TEST(OutputTarget, RegularFilesAndNewPathsAreRenamedOver) {
  const testing::TempDir dir;
  testing::WriteFile(dir.File("old"), "x");
  for (const std::string& path : {dir.File("old"), dir.File("new")}) {
    const OutputTarget target = ResolveOutputTarget(path);
    EXPECT_EQ(target.path, path);
    EXPECT_FALSE(target.stream);
  }
}

TEST(OutputTarget, ASymlinkIsFollowedAndStaysALink) {
  const testing::TempDir dir;
  fs::create_directory(dir.File("real"));
  testing::WriteFile(dir.File("real/model"), "old");
  fs::create_symlink("real/model", dir.File("link"));
  EXPECT_EQ(ResolveOutputTarget(dir.File("link")).path, fs::canonical(dir.File("real/model")).string());
  AtomicFile file(dir.File("link"));
  file.Write("new");
  file.Commit();
  EXPECT_TRUE(fs::is_symlink(dir.File("link")));
  EXPECT_EQ(testing::ReadFile(dir.File("real/model")), "new");
  EXPECT_EQ(std::distance(fs::directory_iterator(dir.File("real")), fs::directory_iterator()), 1);
}

TEST(OutputTarget, AFifoIsWrittenIntoAndStaysAFifo) {
  const testing::TempDir dir;
  const std::string fifo = dir.File("pipe");
  ASSERT_EQ(::mkfifo(fifo.c_str(), 0600), 0);
  EXPECT_TRUE(ResolveOutputTarget(fifo).stream);
  const std::string received = ThroughFifo(fifo, [&] {
    AtomicFile file(fifo);
    file.Write("through the pipe\n");
    file.Commit();
  });
  EXPECT_EQ(received, "through the pipe\n");
  EXPECT_TRUE(fs::is_fifo(fifo));
  // A symlink to it is followed to it.
  fs::create_symlink("pipe", dir.File("link"));
  const OutputTarget linked = ResolveOutputTarget(dir.File("link"));
  EXPECT_TRUE(linked.stream);
  EXPECT_EQ(linked.path, dir.File("link"));  // opened by its own name, which leads to the FIFO
}

TEST(OutputTarget, ACharacterDeviceIsWrittenIntoAndNeverReplaced) {
  // The machine's /dev/null is not put at risk: a node of the same device inside a temporary
  // folder (root only; elsewhere /dev/null itself is safe, since no one else can replace it).
  const testing::TempDir dir;
  std::string null_device = dir.File("null");
  if (::mknod(null_device.c_str(), S_IFCHR | 0666, makedev(1, 3)) != 0) null_device = "/dev/null";
  EXPECT_TRUE(ResolveOutputTarget(null_device).stream);
  AtomicFile file(null_device);
  file.Write("discarded");
  file.Commit();
  EXPECT_TRUE(fs::is_character_file(null_device));
  if (null_device != "/dev/null") {
    EXPECT_EQ(std::distance(fs::directory_iterator(dir.path()), fs::directory_iterator()), 1);
  }
  // A full device's error is reported, as a full disk's is.
  if (fs::is_character_file("/dev/full")) {
    EXPECT_THROW(
        {
          AtomicFile full("/dev/full");
          full.Write(std::string(1 << 16, 'x'));
          full.Commit();
        },
        std::runtime_error);
  }
}

TEST(OutputTarget, FoldersSocketsAndDanglingLinksAreRefusedSayingWhatTheyAre) {
  const testing::TempDir dir;
  EXPECT_NE(Refusal(dir.path()).find("is a folder"), std::string::npos) << Refusal(dir.path());
  // A socket.
  const std::string socket_path = dir.File("s");
  const int fd = ::socket(AF_UNIX, SOCK_STREAM, 0);
  ASSERT_GE(fd, 0);
  sockaddr_un address{};
  address.sun_family = AF_UNIX;
  ASSERT_LT(socket_path.size(), sizeof address.sun_path);
  std::strcpy(address.sun_path, socket_path.c_str());
  ASSERT_EQ(::bind(fd, reinterpret_cast<const sockaddr*>(&address), sizeof address), 0);
  EXPECT_NE(Refusal(socket_path).find("is a socket"), std::string::npos) << Refusal(socket_path);
  ::close(fd);
  // A link to nothing: neither followed (the file would appear elsewhere) nor replaced.
  fs::create_symlink("missing/file", dir.File("dangling"));
  EXPECT_NE(Refusal(dir.File("dangling")).find("is a symlink to nothing (missing/file)"), std::string::npos)
      << Refusal(dir.File("dangling"));
  EXPECT_THROW(AtomicFile{dir.File("dangling")}, std::invalid_argument);
  EXPECT_TRUE(fs::is_symlink(dir.File("dangling")));
  // A block device (a loop device's node, made here as root; never opened).
  const std::string block = dir.File("block");
  if (::mknod(block.c_str(), S_IFBLK | 0600, makedev(7, 0)) == 0) {
    EXPECT_NE(Refusal(block).find("is a block device"), std::string::npos) << Refusal(block);
    EXPECT_THROW(AtomicFile{block}, std::invalid_argument);
    EXPECT_TRUE(fs::is_block_file(block));
  }
}

}  // namespace
}  // namespace xmlt::data
