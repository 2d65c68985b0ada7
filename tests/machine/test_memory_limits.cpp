// machine::memory_bounds on fake /proc and cgroup trees: MemAvailable, a v1 memory cgroup and its
// ancestors, a v2 one, the address-space limit, and the tightest first.

#include <gtest/gtest.h>

#include <fstream>
#include <limits>
#include <string>

#include "tally/machine/memory_limits.h"
#include "temp_dir.h"

namespace tally::machine {
namespace {

namespace fs = std::filesystem;

void write(const fs::path& path, const std::string& text) {
  fs::create_directories(path.parent_path());
  std::ofstream(path) << text;
}

constexpr int64_t kGiB = int64_t{1} << 30, kMiB = int64_t{1} << 20;

/// A fake /proc and /proc/self with `cgroup` and `mountinfo` text, under dir.
MemoryBoundSources fake_proc(const test::TempDir& dir, const std::string& cgroup, const std::string& mountinfo) {
  write(dir.file("proc/meminfo"), "MemTotal:       24000000 kB\nMemFree:        1000 kB\nMemAvailable:   20971520 kB\n");
  write(dir.file("self/cgroup"), cgroup);
  write(dir.file("self/mountinfo"), mountinfo);
  write(dir.file("self/status"), "Name:\ttally\nVmPeak:\t  999 kB\nVmSize:\t  524288 kB\n");
  return {dir.file("proc"), dir.file("self"), std::numeric_limits<int64_t>::max()};  // no address-space limit
}

TEST(MemoryBounds, MemAvailableAloneWithoutCgroupsOrLimits) {
  test::TempDir dir;
  const MemoryBoundSources s = fake_proc(dir, "0::/\n", "");
  const std::vector<MemoryBound> bounds = memory_bounds(s);
  ASSERT_EQ(bounds.size(), 1u);
  EXPECT_EQ(bounds[0].available_bytes, 20 * kGiB);
  EXPECT_NE(bounds[0].source.find("MemAvailable"), std::string::npos);
}

// v1: the process's group has no limit of its own, its parent has 1.5 GiB with 1 GiB used of
// which 256 MiB is inactive file cache; the root has none.
TEST(MemoryBounds, AV1CgroupAndItsAncestors) {
  test::TempDir dir;
  const fs::path mem = dir.file("cg/memory");
  MemoryBoundSources s = fake_proc(dir, "4:memory:/jobs/run1\n1:cpu:/\n",
                                   "35 31 0:32 / " + mem.string() + " rw,relatime - cgroup cgroup rw,memory\n");
  const std::string none = "9223372036854771712\n";
  write(mem / "memory.limit_in_bytes", none);
  write(mem / "memory.usage_in_bytes", "5000000000\n");
  write(mem / "jobs/memory.limit_in_bytes", std::to_string(3 * kGiB / 2));
  write(mem / "jobs/memory.usage_in_bytes", std::to_string(kGiB));
  write(mem / "jobs/memory.stat", "cache 400000000\ntotal_inactive_file " + std::to_string(256 * kMiB) + "\n");
  write(mem / "jobs/run1/memory.limit_in_bytes", none);
  write(mem / "jobs/run1/memory.usage_in_bytes", std::to_string(kGiB));
  const std::vector<MemoryBound> bounds = memory_bounds(s);
  ASSERT_EQ(bounds.size(), 2u);
  EXPECT_EQ(bounds[0].available_bytes, kGiB / 2 + 256 * kMiB);
  EXPECT_NE(bounds[0].source.find("memory cgroup /jobs (v1 limit 1.50 GiB"), std::string::npos) << bounds[0].source;
  EXPECT_NE(bounds[1].source.find("MemAvailable"), std::string::npos);
}

// v2 in a container whose mount shows only its own part of the hierarchy (root /ctr).
TEST(MemoryBounds, AV2CgroupMountedFromASubtree) {
  test::TempDir dir;
  const fs::path unified = dir.file("cg2");
  MemoryBoundSources s = fake_proc(dir, "0::/ctr/app\n", "41 31 0:38 /ctr " + unified.string() + " rw,relatime - cgroup2 cgroup2 rw\n");
  write(unified / "app/memory.max", "max\n");
  write(unified / "app/memory.current", "100\n");
  write(unified / "memory.max", std::to_string(2 * kGiB));
  write(unified / "memory.current", std::to_string(kGiB));
  write(unified / "memory.stat", "anon 1\ninactive_file 0\n");
  const std::vector<MemoryBound> bounds = memory_bounds(s);
  ASSERT_EQ(bounds.size(), 2u);
  EXPECT_EQ(bounds[0].available_bytes, kGiB);
  EXPECT_NE(bounds[0].source.find("v2 memory.max 2.00 GiB"), std::string::npos) << bounds[0].source;
}

TEST(MemoryBounds, TheAddressSpaceLimitLessWhatIsMapped) {
  test::TempDir dir;
  MemoryBoundSources s = fake_proc(dir, "0::/\n", "");
  s.address_space_limit_bytes = kGiB;
  const std::vector<MemoryBound> bounds = memory_bounds(s);
  ASSERT_EQ(bounds.size(), 2u);
  EXPECT_EQ(bounds[0].available_bytes, kGiB - 512 * kMiB);  // VmSize 524288 kB
  EXPECT_NE(bounds[0].source.find("RLIMIT_AS"), std::string::npos);
}

TEST(MemoryBounds, ThisProcessHasAtLeastTheMachinesBound) {
  const std::vector<MemoryBound> bounds = memory_bounds();
  ASSERT_FALSE(bounds.empty());
  for (size_t i = 1; i < bounds.size(); ++i) EXPECT_LE(bounds[i - 1].available_bytes, bounds[i].available_bytes);
}

}  // namespace
}  // namespace tally::machine
