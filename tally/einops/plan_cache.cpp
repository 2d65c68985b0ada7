#include "tally/einops/plan_cache.h"

namespace tally::einops {

namespace detail {
CacheCounters& cache_counters() {
  static CacheCounters counters;
  return counters;
}
}  // namespace detail

CacheStats cache_stats() {
  const detail::CacheCounters& c = detail::cache_counters();
  return {c.hits.load(std::memory_order_relaxed), c.misses.load(std::memory_order_relaxed),
          c.entries.load(std::memory_order_relaxed)};
}

}  // namespace tally::einops
