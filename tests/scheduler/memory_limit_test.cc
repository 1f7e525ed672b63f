// Issue: reliability, third round, row 6. Inside a memory-limited cgroup the plan was checked
// against the machine's MemAvailable, and a run that could not fit was killed by the kernel (137)
// instead of refused. The cgroup files are laid out under a temporary root as the kernel shows them.
#include "scheduler/memory_limit.h"

#include <gtest/gtest.h>

#include <filesystem>
#include <limits>
#include <string>

#include "tests/test_support.h"

namespace xmlt::scheduler {
namespace {

namespace fs = std::filesystem;
constexpr uint64_t kMiB = uint64_t{1} << 20;
constexpr uint64_t kNoLimit = std::numeric_limits<uint64_t>::max();

// A fake / : /proc/meminfo with 8 GiB available, and `cgroup` as /proc/self/cgroup.
struct FakeRoot {
  testing::TempDir dir;
  explicit FakeRoot(const std::string& cgroup) {
    Write("proc/meminfo", "MemTotal:       16777216 kB\nMemAvailable:    8388608 kB\n");
    Write("proc/self/cgroup", cgroup);
  }
  void Write(const std::string& path, const std::string& text) const {
    fs::create_directories(fs::path(dir.File(path)).parent_path());
    testing::WriteFile(dir.File(path), text);
  }
  std::string root() const { return dir.path(); }
};

TEST(MemoryLimit, CgroupV2LimitLessItsWorkingSetIsWhatIsAvailable) {
  FakeRoot fake("0::/job/step\n");
  fake.Write("sys/fs/cgroup/cgroup.controllers", "cpu memory\n");
  fake.Write("sys/fs/cgroup/job/step/memory.max", std::to_string(300 * kMiB) + "\n");
  fake.Write("sys/fs/cgroup/job/step/memory.current", std::to_string(100 * kMiB) + "\n");
  fake.Write("sys/fs/cgroup/job/step/memory.stat", "anon 1\ninactive_file " + std::to_string(20 * kMiB) + "\n");
  fake.Write("sys/fs/cgroup/job/memory.max", "max\n");
  EXPECT_EQ(CgroupMemoryHeadroom(fake.root()), 220 * kMiB);
  EXPECT_EQ(AvailableMemory(fake.root()), 220 * kMiB);  // not the machine's 8 GiB
  // A tighter limit on a group above holds too.
  fake.Write("sys/fs/cgroup/job/memory.max", std::to_string(150 * kMiB) + "\n");
  fake.Write("sys/fs/cgroup/job/memory.current", std::to_string(100 * kMiB) + "\n");
  EXPECT_EQ(AvailableMemory(fake.root()), 50 * kMiB);
  // Over the limit already: nothing left, which must not read as "unknown" (0).
  fake.Write("sys/fs/cgroup/job/step/memory.current", std::to_string(400 * kMiB) + "\n");
  EXPECT_EQ(AvailableMemory(fake.root()), 1u);
}

TEST(MemoryLimit, CgroupV2WithoutALimitLeavesTheMachinesMemory) {
  FakeRoot fake("0::/\n");
  fake.Write("sys/fs/cgroup/cgroup.controllers", "cpu memory\n");
  fake.Write("sys/fs/cgroup/memory.max", "max\n");
  EXPECT_EQ(CgroupMemoryHeadroom(fake.root()), kNoLimit);
  EXPECT_EQ(AvailableMemory(fake.root()), 8192 * kMiB);
}

TEST(MemoryLimit, CgroupV1HierarchicalLimitCounts) {
  FakeRoot fake("12:pids:/docker/abc\n4:memory:/docker/abc\n1:cpu,cpuacct:/docker/abc\n0::/\n");
  fake.Write("sys/fs/cgroup/memory/docker/abc/memory.limit_in_bytes", "9223372036854771712\n");
  fake.Write("sys/fs/cgroup/memory/docker/abc/memory.usage_in_bytes", std::to_string(120 * kMiB) + "\n");
  fake.Write("sys/fs/cgroup/memory/docker/abc/memory.stat",
             "cache 5\nhierarchical_memory_limit " + std::to_string(300 * kMiB) + "\ntotal_inactive_file " +
                 std::to_string(20 * kMiB) + "\n");
  EXPECT_EQ(AvailableMemory(fake.root()), 200 * kMiB);
  // Unlimited, as v1 writes it.
  fake.Write("sys/fs/cgroup/memory/docker/abc/memory.stat", "hierarchical_memory_limit 9223372036854771712\n");
  EXPECT_EQ(AvailableMemory(fake.root()), 8192 * kMiB);
}

TEST(MemoryLimit, AContainerThatMountsOnlyItsOwnGroupIsReadAtTheMount) {
  FakeRoot fake("4:memory:/kubepods/pod1/c1\n");  // no such folder under the mount
  fake.Write("sys/fs/cgroup/memory/memory.limit_in_bytes", std::to_string(512 * kMiB) + "\n");
  fake.Write("sys/fs/cgroup/memory/memory.usage_in_bytes", std::to_string(12 * kMiB) + "\n");
  EXPECT_EQ(AvailableMemory(fake.root()), 500 * kMiB);
}

TEST(MemoryLimit, WithoutCgroupFilesTheMachinesMemoryHolds) {
  FakeRoot fake("");
  EXPECT_EQ(CgroupMemoryHeadroom(fake.root()), kNoLimit);
  EXPECT_EQ(AvailableMemory(fake.root()), 8192 * kMiB);
  testing::TempDir empty;
  EXPECT_EQ(AvailableMemory(empty.path()), 0u);  // nothing known: the check is skipped
}

}  // namespace
}  // namespace xmlt::scheduler
