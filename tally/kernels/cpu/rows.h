#pragma once
// Row kernels (norms, attention's softmax) work on one contiguous row at a time in the row's
// compute type: float32 for float32 and the 16-bit floats, float64 for float64. A float32 or
// float64 row is read in place; a 16-bit row is widened into the thread's scratch row first and
// its result rounded once on the way back. The arithmetic is written once, over RowLanes<C>:
// 16 float32 lanes per block (the tail masked) or one float64 at a time.

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <limits>
#include <string_view>
#include <type_traits>

#include "tally/dtype/dtype.h"
#include "tally/kernels/cpu/dispatch.h"
#include "tally/kernels/cpu/elementwise.h"
#include "tally/kernels/cpu/parallel.h"
#include "tally/kernels/cpu/vec_math.h"

namespace tally::kernels {
inline namespace TALLY_CPU_TARGET {  // Note [CPU kernel dispatch]: one copy per target

/// Rows of n elements per parallel piece: about one elementwise grain of elements.
inline int64_t row_grain(int64_t n) { return std::max<int64_t>(1, kElementwiseGrain / std::max<int64_t>(n, 1)); }

/// A thread's growable buffer of C (not std::vector: Note [CPU kernel dispatch]).
template <class C>
struct RowScratch {
  C* data = nullptr;
  int64_t size = 0;
  RowScratch() = default;
  RowScratch(const RowScratch&) = delete;
  RowScratch& operator=(const RowScratch&) = delete;
  ~RowScratch() { delete[] data; }
  C* reserve(int64_t n) {
    if (size < n) {
      delete[] data;
      data = new C[static_cast<size_t>(n)];
      size = n;
    }
    return data;
  }
};

// float64 stand-ins for the Vec16f operations, so a row's arithmetic reads the same in both.
inline double add(double a, double b) { return a + b; }
inline double sub(double a, double b) { return a - b; }
inline double mul(double a, double b) { return a * b; }

/// Blocks of a row of C: Vec16f for float, double for double.
template <class C>
struct RowLanes {
  static constexpr bool kVector = std::is_same_v<C, float>;
  static constexpr int64_t kWidth = kVector ? 16 : 1;
  using V = std::conditional_t<kVector, Vec16f, double>;
  /// m (≤ kWidth) elements from p; the lanes past m are zero.
  static V load(const C* p, int64_t m) {
    if constexpr (kVector) return m == kWidth ? kernels::load(p) : load_partial(p, m);
    else return *p;
  }
  static void store(C* p, V v, int64_t m) {
    if constexpr (kVector) {
      if (m == kWidth) kernels::store(p, v);
      else store_partial(p, v, m);
    } else {
      *p = v;
    }
  }
  static V splat(C x) {
    if constexpr (kVector) return kernels::splat(x);
    else return x;
  }
  /// v with the lanes from m on zeroed (a tail block's values past the row's end).
  static V keep(V v, int64_t m) {
    if constexpr (kVector) {
      float lanes[16];
      kernels::store(lanes, v);
      return load_partial(lanes, m);
    } else {
      return m > 0 ? v : 0.0;
    }
  }
  static V exp(V v) {
    if constexpr (kVector) return kernels::exp(v);
    else return std::exp(v);
  }
  /// The sum of a block's lanes.
  static C total(V v) {
    if constexpr (kVector) return reduce_add(v);
    else return v;
  }
};

/// f(i, m) for each block of a row of n: m elements from i (m = kWidth except at the tail).
template <class C, class F>
void for_blocks(int64_t n, F&& f) {
  constexpr int64_t w = RowLanes<C>::kWidth;
  for (int64_t i = 0; i < n; i += w) f(i, std::min(w, n - i));
}

/// Σ f(i, m) over a row's blocks, as a C; the tail block's lanes past the row are not counted,
/// whatever f made of the zeros loaded there.
template <class C, class F>
C row_sum(int64_t n, F&& f) {
  using L = RowLanes<C>;
  typename L::V acc = L::splat(C(0));
  for_blocks<C>(n, [&](int64_t i, int64_t m) { acc = add(acc, m == L::kWidth ? f(i, m) : L::keep(f(i, m), m)); });
  return L::total(acc);
}

/// The largest of a row's n elements (−inf for an empty row).
template <class C>
C row_max(const C* x, int64_t n) {
  C m = -std::numeric_limits<C>::infinity();
  int64_t i = 0;
  if constexpr (RowLanes<C>::kVector) {
    Vec16f v = splat(m);
    for (; i + 16 <= n; i += 16) v = kernels::max(v, kernels::load(x + i));
    m = reduce_max(v);
  }
  for (; i < n; ++i) m = std::max(m, x[i]);
  return m;
}

/// A row of n T in its compute type: in place for float and double; a 16-bit row widened into
/// `buf` (the only case that reserves it).
template <class T>
const compute_t<T>* widen_row(const T* src, RowScratch<compute_t<T>>& buf, int64_t n) {
  if constexpr (std::is_same_v<T, compute_t<T>>) {
    return src;
  } else {
    float* dst = buf.reserve(n);
    const auto* s = reinterpret_cast<const uint16_t*>(src);
    int64_t i = 0;
    for (; i + 16 <= n; i += 16) kernels::store(dst + i, load_16bit<T>(s + i));
    for (; i < n; ++i) dst[i] = static_cast<float>(src[i]);
    return dst;
  }
}

/// Where a row kernel writes a row of n T: the row itself for float and double; for a 16-bit
/// row, `buf`, which narrow_row then rounds into the row.
template <class T>
compute_t<T>* out_row(T* dst, RowScratch<compute_t<T>>& buf, int64_t n) {
  if constexpr (std::is_same_v<T, compute_t<T>>) return dst;
  else return buf.reserve(n);
}
template <class T>
void narrow_row(const compute_t<T>* src, T* dst, int64_t n) {
  if constexpr (!std::is_same_v<T, compute_t<T>>) {
    auto* d = reinterpret_cast<uint16_t*>(dst);
    int64_t i = 0;
    for (; i + 16 <= n; i += 16) store_16bit<T>(d + i, kernels::load(src + i));
    for (; i < n; ++i) dst[i] = T(src[i]);
  }
}

/// The dtypes row kernels take: the floating ones but float8.
template <class T>
constexpr bool kRowDtype = std::is_same_v<T, float> || std::is_same_v<T, double> || std::is_same_v<T, Half> || std::is_same_v<T, BFloat16>;

/// dispatch() for a row kernel: fn.template operator()<T>() for the dtypes row kernels take; any
/// other is an internal error, since the op's meta refused it before.
template <class Fn>
void dispatch_rows(Dtype dt, std::string_view op, Fn&& fn) {
  dispatch(dt, op, [&]<class T>() {
    if constexpr (kRowDtype<T>) fn.template operator()<T>();
    else detail::unknown_kernel_dtype(dt);
  });
}

}  // namespace TALLY_CPU_TARGET
}  // namespace tally::kernels
