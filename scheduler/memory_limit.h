// How much more host memory this process may take. /proc/meminfo's MemAvailable speaks for the
// machine; inside a container (Docker, Kubernetes, systemd, a batch scheduler) the memory cgroup's
// limit is what counts, and a run planned against the machine's memory is killed by the kernel
// (exit 137) instead of refused with the numbers. The least of the two is available.
//
// The cgroup's headroom is its limit less its working set (usage less the inactive file cache,
// which the kernel reclaims before it kills): the fixed cost of this process (libraries, runtimes,
// the data already loaded) is part of that usage by the time the plan is checked, so it is
// accounted for without being estimated.
#pragma once

#include <cstdint>
#include <string>

namespace xmlt::scheduler {

// The memory cgroup's headroom for this process: cgroup v2 (memory.max at its group and every
// group above it, up to the mount) or v1 (the memory controller's hierarchical limit). UINT64_MAX
// when no limit is set or none can be read; at least 1 when a limit is set (0 would read as
// "unknown" and skip the check). `root` prefixes /proc and /sys, for tests.
uint64_t CgroupMemoryHeadroom(const std::string& root = "");

// XMLT_MEMORY_LIMIT, when set: a number of bytes, or of KiB, MiB, GiB or TiB with the suffix K, M,
// G or T ("2G"), that this process plans to stay within; UINT64_MAX when unset. Throws
// std::invalid_argument naming the variable for any other value (or 0).
uint64_t MemoryLimitFromEnvironment();

// min(MemAvailable, CgroupMemoryHeadroom(), MemoryLimitFromEnvironment()); 0 when none is known
// (the check is skipped).
uint64_t AvailableMemory(const std::string& root = "");

}  // namespace xmlt::scheduler
