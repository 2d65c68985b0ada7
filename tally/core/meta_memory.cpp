// The meta device's byte counters (allocator.h): what meta storages would hold, never allocated.

#include <mutex>

#include "tally/core/allocator.h"

namespace tally::meta_memory {

namespace {
struct State {
  std::mutex mu;
  MemoryStats stats;
};
State& state() {
  static State* s = new State();  // never destroyed: storages may outlive static destructors
  return *s;
}
}  // namespace

void allocate(int64_t nbytes, MemoryCategory category) {
  State& s = state();
  std::lock_guard lock(s.mu);
  ++s.stats.num_allocs;
  s.stats.add_live(nbytes, category);
}

void deallocate(int64_t nbytes, MemoryCategory category) {
  State& s = state();
  std::lock_guard lock(s.mu);
  s.stats.remove_live(nbytes, category);
}

void recategorize(int64_t nbytes, MemoryCategory from, MemoryCategory to) {
  State& s = state();
  std::lock_guard lock(s.mu);
  s.stats.remove_live(nbytes, from);
  s.stats.add_live(nbytes, to);
}

MemoryStats stats() {
  State& s = state();
  std::lock_guard lock(s.mu);
  return s.stats;
}

void reset_peak_stats() {
  State& s = state();
  std::lock_guard lock(s.mu);
  s.stats.reset_peaks();
}

void merge_peak_stats(const MemoryStats& earlier) {
  State& s = state();
  std::lock_guard lock(s.mu);
  s.stats.merge_peaks(earlier);
}

}  // namespace tally::meta_memory
