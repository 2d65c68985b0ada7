#pragma once
// Every einops call looks its plan up here instead of parsing its pattern again: the key is the
// pattern plus whatever else the plan depends on (operand ranks, the names of given lengths), so
// a lookup is one hash of a short string under a shared lock.

#include <atomic>
#include <cstdint>
#include <memory>
#include <mutex>
#include <shared_mutex>
#include <string>
#include <string_view>
#include <unordered_map>

namespace tally::einops {

/// Counters over every einops plan cache in the process.
struct CacheStats {
  int64_t hits = 0;     ///< lookups that found a plan
  int64_t misses = 0;   ///< lookups that parsed and planned
  int64_t entries = 0;  ///< plans currently stored
};

/// The counters of all einops plan caches (for tests and benchmarks).
CacheStats cache_stats();

namespace detail {

/// The process-wide counters behind cache_stats().
struct CacheCounters {
  std::atomic<int64_t> hits{0}, misses{0}, entries{0};
};
/// The one instance of the counters.
CacheCounters& cache_counters();

/// Append a small non-negative integer to a cache key in two bytes, so that keys built from
/// counts, ranks and names are unambiguous without separators.
inline void append_key_int(std::string& key, int64_t v) {
  key.push_back(static_cast<char>(v & 0xff));
  key.push_back(static_cast<char>((v >> 8) & 0xff));
}

/// A thread-safe map from key to an immutable plan, built at most once per key (a racing second
/// build is discarded). Plans are never evicted: a program uses a handful of patterns.
template <class Plan>
class PlanCache {
 public:
  /// The plan for `key`, calling `build()` (which may throw; nothing is stored then) on a miss.
  template <class Build>
  std::shared_ptr<const Plan> get(const std::string& key, Build&& build) {
    {
      std::shared_lock lock(mutex_);
      auto it = plans_.find(key);
      if (it != plans_.end()) {
        cache_counters().hits.fetch_add(1, std::memory_order_relaxed);
        return it->second;
      }
    }
    cache_counters().misses.fetch_add(1, std::memory_order_relaxed);
    auto plan = std::make_shared<const Plan>(build());
    std::unique_lock lock(mutex_);
    auto [it, inserted] = plans_.try_emplace(key, std::move(plan));
    if (inserted) cache_counters().entries.fetch_add(1, std::memory_order_relaxed);
    return it->second;
  }

 private:
  std::shared_mutex mutex_;
  std::unordered_map<std::string, std::shared_ptr<const Plan>> plans_;
};

}  // namespace detail
}  // namespace tally::einops
