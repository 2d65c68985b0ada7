#include "tally/accounting/memory_tracker.h"

#include <cstdio>
#include <sstream>

#include "tally/cuda/runtime.h"

namespace tally::accounting {

MemoryStats MemoryTracker::now() const {
  switch (device_.type()) {
    case kCPU: return CpuAllocator::get().stats();
    case kMeta: return meta_memory::stats();
    case kCUDA: break;
  }
  return cuda::memory_stats(device_.index());
}

MemoryTracker::MemoryTracker(Device device) : device_(device), found_(now()), start_allocated_(found_.total_allocated_bytes) {
  switch (device_.type()) {
    case kCPU: CpuAllocator::get().reset_peak_stats(); break;
    case kMeta: meta_memory::reset_peak_stats(); break;
    case kCUDA: cuda::reset_peak_memory_stats(device_.index()); break;
  }
}

MemoryTracker::~MemoryTracker() {
  switch (device_.type()) {
    case kCPU: CpuAllocator::get().merge_peak_stats(found_); break;
    case kMeta: meta_memory::merge_peak_stats(found_); break;
    case kCUDA: cuda::merge_peak_memory_stats(found_, device_.index()); break;
  }
}

int64_t MemoryTracker::allocated_bytes(MemoryCategory c) const { return now().allocated_bytes[static_cast<size_t>(c)]; }
int64_t MemoryTracker::allocated_bytes() const { return now().total_allocated_bytes; }
int64_t MemoryTracker::peak_allocated_bytes(MemoryCategory c) const {
  return now().peak_allocated_bytes[static_cast<size_t>(c)];
}
int64_t MemoryTracker::peak_allocated_bytes() const { return now().peak_total_allocated_bytes; }
int64_t MemoryTracker::reserved_bytes() const { return now().reserved_bytes; }
int64_t MemoryTracker::peak_reserved_bytes() const { return now().peak_reserved_bytes; }
int64_t MemoryTracker::allocated_since_start() const { return now().total_allocated_bytes - start_allocated_; }

std::string format_bytes(int64_t bytes) {
  char buf[64];
  const double b = static_cast<double>(bytes);
  if (bytes < 0) {
    std::string s(1, '-');  // not "-" + string: GCC 12 warns falsely (-Wrestrict) on that
    return s.append(format_bytes(-bytes));
  }
  if (bytes < 1024) std::snprintf(buf, sizeof buf, "%lld B", static_cast<long long>(bytes));
  else if (bytes < (int64_t{1} << 20)) std::snprintf(buf, sizeof buf, "%.1f KiB", b / 1024);
  else if (bytes < (int64_t{1} << 30)) std::snprintf(buf, sizeof buf, "%.1f MiB", b / (1 << 20));
  else std::snprintf(buf, sizeof buf, "%.2f GiB", b / (1 << 30));
  return buf;
}

std::string MemoryTracker::report() const {
  const MemoryStats s = now();
  std::ostringstream os;
  char line[160];
  std::snprintf(line, sizeof line, "%-16s %14s %14s\n", "category", "live", "peak");
  os << line;
  for (int c = 0; c < kNumMemoryCategories; ++c) {
    std::snprintf(line, sizeof line, "%-16s %14s %14s\n", std::string(memory_category_name(static_cast<MemoryCategory>(c))).c_str(),
                  format_bytes(s.allocated_bytes[c]).c_str(), format_bytes(s.peak_allocated_bytes[c]).c_str());
    os << line;
  }
  std::snprintf(line, sizeof line, "%-16s %14s %14s\n", "allocated", format_bytes(s.total_allocated_bytes).c_str(),
                format_bytes(s.peak_total_allocated_bytes).c_str());
  os << line;
  std::snprintf(line, sizeof line, "%-16s %14s %14s   (cached for reuse: %s)\n", "reserved", format_bytes(s.reserved_bytes).c_str(),
                format_bytes(s.peak_reserved_bytes).c_str(), format_bytes(s.cached_bytes).c_str());
  os << line;
  return os.str();
}

void set_memory_category(const Tensor& t, MemoryCategory category) { t.storage()->set_category(category); }

}  // namespace tally::accounting
