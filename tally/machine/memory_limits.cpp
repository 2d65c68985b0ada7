#include "tally/machine/memory_limits.h"

#include <sys/resource.h>

#include <algorithm>
#include <charconv>
#include <optional>
#include <sstream>
#include <string_view>

#include "tally/core/allocator.h"
#include "tally/error/error.h"
#include "tally/machine/cache_dir.h"

namespace tally::machine {

namespace fs = std::filesystem;

namespace {

// A limit this high is none: cgroup v1 says "no limit" with 2^63 rounded down to a page.
constexpr int64_t kNoLimit = int64_t{1} << 62;

std::optional<int64_t> parse_int(std::string_view text) {
  while (!text.empty() && (text.back() == '\n' || text.back() == ' ')) text.remove_suffix(1);
  int64_t v = 0;
  const auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), v);
  if (ec != std::errc() || end != text.data() + text.size()) return std::nullopt;
  return v;
}

/// The number after `key` at the start of a line of `text` ("MemAvailable:  123 kB", "inactive_file 45").
std::optional<int64_t> field(const std::string& text, std::string_view key) {
  std::istringstream lines(text);
  for (std::string line; std::getline(lines, line);) {
    if (!line.starts_with(key) || line.size() == key.size() || (line[key.size()] != ' ' && line[key.size()] != '\t')) continue;
    std::istringstream rest(line.substr(key.size()));
    int64_t v = 0;
    if (rest >> v) return v;
  }
  return std::nullopt;
}

std::optional<int64_t> read_int(const fs::path& path) {
  const std::optional<std::string> text = read_text_file(path);
  return text ? parse_int(*text) : std::nullopt;
}

/// A cgroup hierarchy this process belongs to: where it is mounted, and the process's group in it.
struct CgroupDir {
  bool v2 = false;
  fs::path mount;       ///< the mount point
  std::string root;     ///< the part of the hierarchy the mount shows ("/" for all of it)
  std::string group;    ///< this process's group, from /proc/self/cgroup
};

/// The memory cgroup hierarchies of this process: v1's "memory" controller and v2's unified one.
std::vector<CgroupDir> memory_cgroups(const fs::path& self) {
  std::vector<CgroupDir> found;
  const std::optional<std::string> cgroups = read_text_file(self / "cgroup"), mounts = read_text_file(self / "mountinfo");
  if (!cgroups || !mounts) return found;
  std::string v1_group, v2_group;
  bool has_v2 = false;
  std::istringstream lines(*cgroups);
  for (std::string line; std::getline(lines, line);) {  // "4:memory:/a/b" or "0::/a/b"
    const size_t a = line.find(':'), b = a == std::string::npos ? a : line.find(':', a + 1);
    if (b == std::string::npos) continue;
    const std::string controllers = line.substr(a + 1, b - a - 1), group = line.substr(b + 1);
    if (controllers.empty()) {
      has_v2 = true;
      v2_group = group;
    }
    std::istringstream names(controllers);
    for (std::string name; std::getline(names, name, ',');)
      if (name == "memory") v1_group = group;
  }
  std::istringstream mount_lines(*mounts);
  for (std::string line; std::getline(mount_lines, line);) {
    // "35 31 0:32 / /sys/fs/cgroup/memory rw,relatime - cgroup cgroup rw,memory"
    std::istringstream f(line);
    std::string id, parent, dev, root, point, word;
    f >> id >> parent >> dev >> root >> point;
    while (f >> word && word != "-") {}
    std::string fstype, source, options;
    f >> fstype >> source >> options;
    if (fstype == "cgroup2" && has_v2) found.push_back({true, point, root, v2_group});
    if (fstype == "cgroup" && !v1_group.empty() && ("," + options + ",").find(",memory,") != std::string::npos)
      found.push_back({false, point, root, v1_group});
  }
  return found;
}

/// The bounds of one hierarchy: each group from the process's up to the mount's root that has a
/// limit (v1 reports "no limit" as a huge number: anything above 2^62 bytes is taken as none).
void cgroup_bounds(const CgroupDir& c, std::vector<MemoryBound>& bounds) {
  std::string relative = c.group;
  if (c.root != "/" && relative.starts_with(c.root)) relative = relative.substr(c.root.size());
  fs::path dir = c.mount / fs::path(relative).relative_path();
  const fs::path top = c.mount;
  for (;;) {
    const char* limit_file = c.v2 ? "memory.max" : "memory.limit_in_bytes";
    const char* usage_file = c.v2 ? "memory.current" : "memory.usage_in_bytes";
    const std::optional<int64_t> limit = read_int(dir / limit_file), usage = read_int(dir / usage_file);
    if (limit && usage && *limit < kNoLimit) {
      int64_t reclaimable = 0;
      if (const std::optional<std::string> stat = read_text_file(dir / "memory.stat"))
        reclaimable = field(*stat, c.v2 ? "inactive_file" : "total_inactive_file").value_or(field(*stat, "inactive_file").value_or(0));
      const std::string below = fs::relative(dir, top).generic_string();
      std::string name(1, '/');  // not "/" + below: GCC 12 warns falsely (-Wrestrict) on that
      if (below != ".") name += below;
      bounds.push_back({::tally::detail::str_cat("memory cgroup ", name, " (", c.v2 ? "v2 memory.max" : "v1 limit",
                                                 " ", describe_bytes(*limit), ")"),
                        std::max<int64_t>(*limit - *usage + reclaimable, 0)});
    }
    if (dir == top || !dir.has_parent_path() || dir.parent_path() == dir) break;
    dir = dir.parent_path();
  }
}

}  // namespace

ProcessMemory process_memory(const fs::path& self) {
  ProcessMemory m;
  const std::optional<std::string> status = read_text_file(self / "status");
  if (!status) return m;
  auto kib = [&](std::string_view key) { return field(*status, key).value_or(0) * 1024; };
  m.rss_bytes = kib("VmRSS:");
  m.peak_rss_bytes = kib("VmHWM:");
  m.anonymous_bytes = kib("RssAnon:");
  m.file_bytes = kib("RssFile:") + kib("RssShmem:");
  return m;
}

std::vector<MemoryBound> memory_bounds(const MemoryBoundSources& sources) {
  std::vector<MemoryBound> bounds;
  if (const std::optional<std::string> meminfo = read_text_file(sources.proc / "meminfo"))
    if (const std::optional<int64_t> kib = field(*meminfo, "MemAvailable:")) {
      MemoryBound& b = bounds.emplace_back();  // member by member: GCC 12 misreads an aggregate's string copy (-Warray-bounds)
      b.source = "the machine's available memory (MemAvailable)";
      b.available_bytes = *kib * 1024;
    }
  for (const CgroupDir& c : memory_cgroups(sources.self)) cgroup_bounds(c, bounds);
  int64_t as_limit = kNoLimit;
  if (sources.address_space_limit_bytes) {
    as_limit = *sources.address_space_limit_bytes;
  } else if (rlimit r{}; getrlimit(RLIMIT_AS, &r) == 0 && r.rlim_cur < static_cast<rlim_t>(kNoLimit)) {
    as_limit = static_cast<int64_t>(r.rlim_cur);
  }
  if (as_limit < kNoLimit) {
    const std::optional<std::string> status = read_text_file(sources.self / "status");
    const int64_t mapped = status ? field(*status, "VmSize:").value_or(0) * 1024 : 0;
    bounds.push_back({::tally::detail::str_cat("the address-space limit (RLIMIT_AS ", describe_bytes(as_limit), ")"),
                      std::max<int64_t>(as_limit - mapped, 0), /*per_process=*/true});
  }
  std::stable_sort(bounds.begin(), bounds.end(), [](const MemoryBound& a, const MemoryBound& b) { return a.available_bytes < b.available_bytes; });
  return bounds;
}

}  // namespace tally::machine
