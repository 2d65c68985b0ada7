#pragma once
// Reduction loops. A reduction is laid out as `outer` independent results, each folding
// `inner` elements; the op layer arranges the input so that either the inner elements of one
// result are contiguous (rows) or the results are contiguous (columns), copying otherwise.
//
// A reducer R<T> provides: using Acc; Acc init(); Acc step(Acc, compute value, int64 index);
// Acc combine(Acc, Acc) (for splitting a row across threads); and the caller turns an Acc into
// the output element.

#include <cstdint>
#include <vector>

#include "tally/dtype/dtype.h"
#include "tally/kernels/cpu/parallel.h"
#include "tally/kernels/cpu/target.h"

namespace tally::kernels {
inline namespace TALLY_CPU_TARGET {  // Note [CPU kernel dispatch]: one copy per target

/// Elements one thread should at least fold before a reduction splits work.
inline constexpr int64_t kReduceGrain = 65536;

/// out[o] = fold over row o: x[o*row_stride + i], i < inner (contiguous rows).
template <class T, class R, class Store>
void reduce_rows(const T* x, int64_t outer, int64_t row_stride, int64_t inner, const R& r, Store store) {
  if (outer == 1 && inner >= 2 * kReduceGrain) {
    // One long row: fold pieces on each thread, then combine in order.
    const int64_t threads = num_threads();
    struct Slot { typename R::Acc acc; };  // not vector<bool>: threads write their own slot
    std::vector<Slot> partial(static_cast<size_t>(threads), Slot{r.init()});
    parallel_for(inner, kReduceGrain, [&](int64_t b, int64_t e) {
      partial[static_cast<size_t>(omp_get_thread_num())].acc = r.fold(x + b, e - b, b);
    });
    typename R::Acc acc = r.init();
    for (auto& p : partial) acc = r.combine(acc, p.acc);
    store(0, acc);
    return;
  }
  parallel_for(outer, std::max<int64_t>(1, kReduceGrain / std::max<int64_t>(inner, 1)), [&](int64_t b, int64_t e) {
    for (int64_t o = b; o < e; ++o) store(o, r.fold(x + o * row_stride, inner, 0));
  });
}

/// out[j] = fold over rows i < inner of x[i*row_stride + j], j < outer (contiguous results).
template <class T, class R, class Store>
void reduce_columns(const T* x, int64_t inner, int64_t row_stride, int64_t outer, const R& r, Store store) {
  using C = compute_t<T>;
  parallel_for(outer, std::max<int64_t>(16, kReduceGrain / std::max<int64_t>(inner, 1)), [&](int64_t b, int64_t e) {
    struct Slot { typename R::Acc acc; };
    std::vector<Slot> acc(static_cast<size_t>(e - b), Slot{r.init()});
    for (int64_t i = 0; i < inner; ++i) {
      const T* row = x + i * row_stride;
      for (int64_t j = b; j < e; ++j) acc[j - b].acc = r.step(acc[j - b].acc, static_cast<C>(row[j]), i);
    }
    for (int64_t j = b; j < e; ++j) store(j, acc[j - b].acc);
  });
}

}  // namespace TALLY_CPU_TARGET
}  // namespace tally::kernels
