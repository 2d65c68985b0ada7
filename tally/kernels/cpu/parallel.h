#pragma once
// Work splitting over the cores with OpenMP (the one threading runtime in tally: oneDNN uses it too).

#include <omp.h>

#include <algorithm>
#include <cstdint>

#include "tally/kernels/cpu/target.h"

namespace tally::kernels {
inline namespace TALLY_CPU_TARGET {  // Note [CPU kernel dispatch]: one copy per target

/// Elements below which an elementwise loop stays on one thread (thread start-up costs ~µs).
inline constexpr int64_t kElementwiseGrain = 32768;

/// Call fn(begin, end) on disjoint pieces of [0, n), one per thread, when n spans more than
/// one grain; otherwise once on the calling thread. fn must not throw.
template <class Fn>
void parallel_for(int64_t n, int64_t grain, Fn&& fn) {
  if (n <= 0) return;
  const int64_t threads = std::min<int64_t>(omp_get_max_threads(), (n + grain - 1) / grain);
  if (threads <= 1 || omp_in_parallel()) {
    fn(int64_t{0}, n);
    return;
  }
#pragma omp parallel num_threads(static_cast<int>(threads))
  {
    const int64_t t = omp_get_thread_num();
    const int64_t chunk = (n + threads - 1) / threads;
    const int64_t begin = t * chunk, end = std::min(n, begin + chunk);
    if (begin < end) fn(begin, end);
  }
}

/// Threads tally's kernels use.
inline int num_threads() { return omp_get_max_threads(); }

}  // namespace TALLY_CPU_TARGET
}  // namespace tally::kernels
