#pragma once
// How much more memory this process may take before the kernel refuses it or kills it: the
// machine's available memory, the memory cgroup's limit (v1 or v2, this process's group and
// every group above it), and the address-space limit. `tally train` compares its predicted peak
// with the tightest of them before it allocates anything (Note [Memory pre-check] in
// tally/train/memory_check.h).

#include <cstdint>
#include <filesystem>
#include <optional>
#include <string>
#include <vector>

namespace tally::machine {

/// One bound on the bytes this process may still allocate.
struct MemoryBound {
  std::string source;           ///< what sets it, e.g. "memory cgroup /a/b (v1 limit 1.50 GiB)"
  int64_t available_bytes = 0;  ///< bytes left under it now (0 when it is exhausted)
  /// This process's own (the address-space limit); the others are shared with every process on
  /// the machine or in the cgroup.
  bool per_process = false;
};

/// Where the bounds are read from: the real /proc and /proc/self, or a test's fake tree.
struct MemoryBoundSources {
  std::filesystem::path proc = "/proc";  ///< meminfo is read here
  std::filesystem::path self = "/proc/self";  ///< cgroup, mountinfo and status are read here
  /// The address-space limit (RLIMIT_AS's soft limit; 2^62 or more: none); empty: read it with getrlimit.
  std::optional<int64_t> address_space_limit_bytes;
};

/// This process's resident memory, from /proc/self/status, in bytes (0 where it is not reported).
struct ProcessMemory {
  int64_t rss_bytes = 0;        ///< resident now (VmRSS)
  int64_t peak_rss_bytes = 0;   ///< the highest resident set so far (VmHWM)
  int64_t anonymous_bytes = 0;  ///< resident anonymous pages: tensors, the allocator's cache, heap, stacks (RssAnon)
  int64_t file_bytes = 0;       ///< resident file pages: code, libraries, mapped data files, shared memory (RssFile + RssShmem)
};
/// The resident memory of this process now.
ProcessMemory process_memory(const std::filesystem::path& self = "/proc/self");

/// Every bound found, tightest first: MemAvailable from meminfo; for each memory cgroup from this
/// process's up to the root that has a limit, the limit less its usage, with the inactive file
/// cache (which the kernel reclaims before it kills) counted as free; RLIMIT_AS less the address
/// space mapped now. A source that cannot be read gives no bound.
std::vector<MemoryBound> memory_bounds(const MemoryBoundSources& sources = {});

}  // namespace tally::machine
