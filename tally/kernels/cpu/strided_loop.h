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

/// Whether p[i] is nonzero, as bool(x) is in PyTorch (NaN true, −0 false), in a form GCC
/// vectorises: float, double and the integers compare their value; bool (which GCC loads in no
/// vectorised loop) and the 16- and 8-bit floats test their bits, the floats' sign bit aside.
template <class T>
[[gnu::always_inline]] inline bool nonzero_at(const T* p, int64_t i) {
  if constexpr (std::is_arithmetic_v<T> && !std::is_same_v<T, bool>) {
    return p[i] != T(0);
  } else {
    using Bits = BitsOf<T>;
    constexpr auto mask = std::is_same_v<T, bool> ? static_cast<Bits>(~Bits{0}) : static_cast<Bits>(~(Bits{1} << (8 * sizeof(Bits) - 1)));
    return (reinterpret_cast<const Bits*>(p)[i] & mask) != 0;
  }
}

/// Operands of an N-operand loop, after dimension ordering and merging. Strides are in bytes.
template <size_t N>
struct StridedLoop {
  // Inline up to 6 merged dims, so building a loop allocates nothing (Note [Small vectors]).
  SmallVector<int64_t, 6> sizes;                   // innermost last
  std::array<SmallVector<int64_t, 6>, N> strides;  // per operand, same length as sizes
  std::array<char*, N> base{};
  std::array<int64_t, N> elem_sizes{};
  int64_t numel = 1;

  /// Note [Loops in tiles]
  /// Dimensions are ordered by the first operand's strides, the output's, so an input dense
  /// along another dimension k than the innermost (x.t() + y, x.t().contiguous()) is read across
  /// rows: each element on another cache line, and often another page, gone before the next row
  /// comes back for its neighbour (x.t() + y.t() on [2048, 2048] float32 took 27 ms, x + y 0.5;
  /// a [4096, 1024] float32 transpose 12.4 ms, PyTorch 3.3). Such a loop walks tiles of
  /// kTileRows × kTileCols elements over k and the innermost dimension, calling fn for each
  /// tile's rows, the tiles down k first so that the lines a tile leaves part-read are read on by
  /// the next. The other dimensions are outer loops; order is free, every element is computed
  /// alone. The sizes were measured (bench/RESULTS.md): at power-of-two row lengths a tile's
  /// lines across rows share one L1 set, so a copy or unary op reads 16 of them at once and an op
  /// with more operands 8 (x.t() + y.t() 7.2 ms with 16, 2.0 with 8; a copy the other way round).
  static constexpr int64_t kTileRows = 32, kTileCols = N == 2 ? 16 : 8;

  /// The loop over `numel` elements that every operand stores densely, in the same order: one run.
  static StridedLoop dense(int64_t numel, std::array<char*, N> ptrs, std::array<int64_t, N> elem_sizes) {
    StridedLoop loop;
    loop.base = ptrs;
    loop.elem_sizes = elem_sizes;
    loop.numel = numel;
    if (numel == 0) return loop;
    loop.sizes.push_back(numel);
    for (size_t op = 0; op < N; ++op) loop.strides[op].push_back(elem_sizes[op]);
    return loop;
  }

  /// Build from the shared shape and each operand's data pointer, element strides and element size.
  StridedLoop(IntArrayRef shape, std::array<char*, N> ptrs, std::array<IntArrayRef, N> elem_strides,
              std::array<int64_t, N> elem_sizes)
      : base(ptrs), elem_sizes(elem_sizes) {
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

  /// The dimension to tile with the innermost one (Note [Loops in tiles]): where the first input
  /// that reads across the innermost dimension is dense, when both are at least half a tile
  /// long; -1 if none.
  int64_t tile_dim() const {
    const size_t nd = sizes.size();
    if (nd < 2 || sizes[nd - 1] < kTileCols / 2) return -1;
    for (size_t op = 1; op < N; ++op) {
      const int64_t inner = strides[op][nd - 1];
      if (inner == 0 || inner == elem_sizes[op] || inner == -elem_sizes[op]) continue;
      for (size_t d = 0; d + 1 < nd; ++d)
        if (strides[op][d] == elem_sizes[op] && sizes[d] >= kTileRows / 2) return static_cast<int64_t>(d);
      return -1;
    }
    return -1;
  }

  /// Call fn(ptrs, inner_strides_bytes, n) for every innermost run, in parallel for large loops.
  template <class Fn>
  void for_each(Fn&& fn, int64_t grain = kElementwiseGrain) const {
    if (numel == 0) return;
    if (const int64_t k = tile_dim(); k >= 0) return for_each_tile(fn, static_cast<size_t>(k), grain);
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

 private:
  /// for_each in tiles over dimension k and the innermost (Note [Loops in tiles]).
  template <class Fn>
  void for_each_tile(Fn& fn, size_t k, int64_t grain) const {
    const size_t nd = sizes.size();
    const int64_t rows = sizes[k], cols = sizes[nd - 1];
    const int64_t outer = numel / (rows * cols);  // every dimension but k and the innermost
    const int64_t row_tiles = (rows + kTileRows - 1) / kTileRows, col_tiles = (cols + kTileCols - 1) / kTileCols;
    std::array<int64_t, N> inner_strides;
    for (size_t op = 0; op < N; ++op) inner_strides[op] = strides[op][nd - 1];
    parallel_for(outer * row_tiles * col_tiles, std::max<int64_t>(1, grain / (kTileRows * kTileCols)), [&](int64_t begin, int64_t end) {
      for (int64_t t = begin; t < end; ++t) {
        const int64_t r0 = t % row_tiles * kTileRows, c0 = t / row_tiles % col_tiles * kTileCols;
        std::array<char*, N> ptrs = base;
        int64_t o = t / (row_tiles * col_tiles);
        for (size_t d = nd - 1; d-- > 0;) {  // the outer index, innermost outer dimension first
          if (d == k) continue;
          const int64_t idx = o % sizes[d];
          o /= sizes[d];
          for (size_t op = 0; op < N; ++op) ptrs[op] += idx * strides[op][d];
        }
        const int64_t r1 = std::min(r0 + kTileRows, rows), n = std::min(kTileCols, cols - c0);
        for (int64_t r = r0; r < r1; ++r) {
          std::array<char*, N> row = ptrs;
          for (size_t op = 0; op < N; ++op) row[op] += r * strides[op][k] + c0 * inner_strides[op];
          fn(row, inner_strides, n);
        }
      }
    });
  }
};

}  // namespace TALLY_CPU_TARGET
}  // namespace tally::kernels
