#pragma once
// N-d iteration over strided operands that share one shape (inputs already broadcast with
// stride 0). Dimensions are ordered by the first operand's strides and merged where every
// operand is contiguous across them, so most loops collapse to one long innermost run that
// a vectorised inner loop handles.

#include <algorithm>
#include <array>
#include <cstdint>
#include <numeric>
#include <type_traits>
#include <utility>

#include "tally/core/int_array_ref.h"
#include "tally/core/small_vector.h"
#include "tally/kernels/cpu/parallel.h"
#include "tally/kernels/cpu/target.h"

namespace tally::kernels {
inline namespace TALLY_CPU_TARGET {  // Note [CPU kernel dispatch]: one copy per target

/// The unsigned integer with T's size: T's bits, moved or filled without T's own conversions.
template <class T>
using BitsOf = std::conditional_t<sizeof(T) == 1, uint8_t,
                                  std::conditional_t<sizeof(T) == 2, uint16_t, std::conditional_t<sizeof(T) == 4, uint32_t, uint64_t>>>;
static_assert(sizeof(BitsOf<double>) == 8);

/// Operands of an N-operand loop, after dimension ordering and merging. Strides are in bytes.
template <size_t N>
struct StridedLoop {
  // Inline up to 6 merged dims, so building a loop allocates nothing (Note [Small vectors]).
  SmallVector<int64_t, 6> sizes;                   // innermost last
  std::array<SmallVector<int64_t, 6>, N> strides;  // per operand, same length as sizes
  std::array<char*, N> base{};
  int64_t numel = 1;

  /// The loop over `numel` elements that every operand stores densely, in the same order: one run.
  static StridedLoop dense(int64_t numel, std::array<char*, N> ptrs, std::array<int64_t, N> elem_sizes) {
    StridedLoop loop;
    loop.base = ptrs;
    loop.numel = numel;
    if (numel == 0) return loop;
    loop.sizes.push_back(numel);
    for (size_t op = 0; op < N; ++op) loop.strides[op].push_back(elem_sizes[op]);
    return loop;
  }

  /// Build from the shared shape and each operand's data pointer, element strides and element size.
  StridedLoop(IntArrayRef shape, std::array<char*, N> ptrs, std::array<IntArrayRef, N> elem_strides,
              std::array<int64_t, N> elem_sizes)
      : base(ptrs) {
    const size_t nd = shape.size();
    SmallVector<size_t, 6> order(nd);
    std::iota(order.begin(), order.end(), size_t{0});
    // Outermost first: larger |stride| of operand 0 (then of the others) goes outside.
    auto key = [&](size_t d, size_t op) {
      int64_t s = elem_strides[op][d] * elem_sizes[op];
      return s < 0 ? -s : s;
    };
    auto outer = [&](size_t a, size_t b) {
      for (size_t op = 0; op < N; ++op) {
        if (key(a, op) != key(b, op)) return key(a, op) > key(b, op);
      }
      return false;
    };
    // A stable insertion sort: a handful of dims, and std::stable_sort would allocate a buffer.
    for (size_t i = 1; i < nd; ++i)
      for (size_t j = i; j > 0 && outer(order[j], order[j - 1]); --j) std::swap(order[j], order[j - 1]);
    for (size_t d : order) {
      numel *= shape[d];
      if (shape[d] == 1) continue;
      bool merge = !sizes.empty();
      for (size_t op = 0; op < N && merge; ++op)
        merge = strides[op].back() == elem_strides[op][d] * elem_sizes[op] * shape[d];
      if (merge) {
        sizes.back() *= shape[d];
        for (size_t op = 0; op < N; ++op) strides[op].back() = elem_strides[op][d] * elem_sizes[op];
      } else {
        sizes.push_back(shape[d]);
        for (size_t op = 0; op < N; ++op) strides[op].push_back(elem_strides[op][d] * elem_sizes[op]);
      }
    }
    if (sizes.empty() && numel > 0) {  // a single element
      sizes.push_back(1);
      for (size_t op = 0; op < N; ++op) strides[op].push_back(0);
    }
  }

  StridedLoop() = default;

  /// Call fn(ptrs, inner_strides_bytes, n) for every innermost run, in parallel for large loops.
  template <class Fn>
  void for_each(Fn&& fn, int64_t grain = kElementwiseGrain) const {
    if (numel == 0) return;
    const int64_t nd = static_cast<int64_t>(sizes.size());
    const int64_t inner = sizes.back();
    std::array<int64_t, N> inner_strides;
    for (size_t op = 0; op < N; ++op) inner_strides[op] = strides[op].back();
    parallel_for(numel, grain, [&](int64_t begin, int64_t end) {
      // Multi-index of `begin`, innermost last.
      SmallVector<int64_t, 6> idx(static_cast<size_t>(nd));
      int64_t rem = begin;
      for (int64_t d = nd - 1; d >= 0; --d) {
        idx[d] = rem % sizes[d];
        rem /= sizes[d];
      }
      std::array<char*, N> ptrs;
      for (size_t op = 0; op < N; ++op) {
        int64_t off = 0;
        for (int64_t d = 0; d < nd; ++d) off += idx[d] * strides[op][d];
        ptrs[op] = base[op] + off;
      }
      // The pointers then move with the index, run by run: short runs (a head's 64 elements in a
      // re-strided copy) cost a few adds each, not a dot product of the whole index.
      int64_t pos = begin;
      while (pos < end) {
        const int64_t n = std::min(inner - idx[nd - 1], end - pos);
        fn(ptrs, inner_strides, n);
        pos += n;
        idx[nd - 1] += n;
        for (size_t op = 0; op < N; ++op) ptrs[op] += n * inner_strides[op];
        for (int64_t d = nd - 1; d > 0 && idx[d] == sizes[d]; --d) {
          idx[d] = 0;
          ++idx[d - 1];
          for (size_t op = 0; op < N; ++op) ptrs[op] += strides[op][d - 1] - sizes[d] * strides[op][d];
        }
      }
    });
  }
};

}  // namespace TALLY_CPU_TARGET
}  // namespace tally::kernels
