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

/// Results up to which reduce_columns splits the rows between threads, each keeping a row of
/// partial results (a bias gradient's thousands fit in L1 many times).
inline constexpr int64_t kRowSplitColumns = 1 << 16;

/// out[j] = fold over rows i < inner of x[i*row_stride + j], j < outer (contiguous results).
template <class T, class R, class Store>
void reduce_columns(const T* x, int64_t inner, int64_t row_stride, int64_t outer, const R& r, Store store) {
  using C = compute_t<T>;
  struct Slot { typename R::Acc acc; };  // not vector<bool>: threads write their own slots
  // Rows [i0, i1) folded into acc[0, j1 - j0) for columns [j0, j1). By value: the loop must not
  // reload anything through a reference after each store.
  auto fold = [x, row_stride, r](int64_t i0, int64_t i1, int64_t j0, int64_t j1, Slot* __restrict acc) {
    if constexpr (requires { r.fold_columns(x, i1 - i0, row_stride, j1 - j0, [](int64_t, float) {}); }) {
      // The reducer's own blocked fold (a sum's float lanes).
      r.fold_columns(x + i0 * row_stride + j0, i1 - i0, row_stride, j1 - j0,
                     [acc](int64_t j, float partial) { acc[j].acc += partial; });
    } else {
      for (int64_t i = i0; i < i1; ++i) {
        const T* __restrict row = x + i * row_stride + j0;
        for (int64_t j = 0; j < j1 - j0; ++j) acc[j].acc = r.step(acc[j].acc, static_cast<C>(row[j]), i);
      }
    }
  };
  if (outer <= kRowSplitColumns) {
    // Each thread folds a block of rows into its own partial results, combined in row order
    // after: a thread reads the rows the elementwise op before it wrote (the same split), from
    // its own cache, where splitting the columns would have each thread read every row.
    const int64_t threads = num_threads();
    std::vector<Slot> partial(static_cast<size_t>(threads * outer), Slot{r.init()});
    parallel_for(inner, std::max<int64_t>(1, kReduceGrain / std::max<int64_t>(outer, 1)), [&](int64_t b, int64_t e) {
      fold(b, e, 0, outer, partial.data() + omp_get_thread_num() * outer);
    });
    for (int64_t j = 0; j < outer; ++j) {
      typename R::Acc acc = partial[static_cast<size_t>(j)].acc;
      for (int64_t t = 1; t < threads; ++t) acc = r.combine(acc, partial[static_cast<size_t>(t * outer + j)].acc);
      store(j, acc);
    }
    return;
  }
  parallel_for(outer, std::max<int64_t>(16, kReduceGrain / std::max<int64_t>(inner, 1)), [&](int64_t b, int64_t e) {
    std::vector<Slot> acc(static_cast<size_t>(e - b), Slot{r.init()});
    fold(0, inner, b, e, acc.data());
    for (int64_t j = b; j < e; ++j) store(j, acc[j - b].acc);
  });
}

}  // namespace TALLY_CPU_TARGET
}  // namespace tally::kernels
