// Reductions. Each reducer (sum, prod, max, min, argmax, argmin, any, all) is a small fold
// definition; Reduce<Def> lays the input out for the kernels and declares the op's cost: one
// FLOP per input element folded, the input read once, the output written once.

#include "tally/ops/reduce.h"

#include <algorithm>
#include <cmath>
#include <limits>

#include "tally/core/geometry.h"
#include "tally/error/warning.h"
#include "tally/kernels/cpu/dispatch.h"
#include "tally/kernels/cpu/elementwise.h"
#include "tally/kernels/cpu/reduce.h"
#include "tally/kernels/cpu/vec_math.h"
#include "tally/kernels/cuda/kernels.h"
#include "tally/ops/apply.h"
#include "tally/ops/creation.h"
#include "tally/ops/elementwise.h"
#include "tally/ops/zero_at_zero.h"

namespace tally {

namespace {

/// Accumulator type: double for floats (so a float32 sum of millions stays accurate), int64
/// for integers and bool.
template <class C> using acc_t = std::conditional_t<std::is_floating_point_v<C>, double, int64_t>;

/// The dtypes whose folds run in float lanes (Vec16f): float32, and the 16-bit floats widened.
template <class T>
constexpr bool kFloatLanes = std::is_same_v<T, float> || std::is_same_v<T, BFloat16> || std::is_same_v<T, Half>;

/// 16 elements from p as float lanes.
template <class T>
  requires kFloatLanes<T>
kernels::Vec16f load_lanes(const T* p) {
  if constexpr (std::is_same_v<T, float>) return kernels::load(p);
  else return kernels::load_16bit<T>(reinterpret_cast<const uint16_t*>(p));
}

/// acc[j] += src[j] for j < n, 16 lanes at a time.
template <class T>
  requires kFloatLanes<T>
void add_lanes(float* acc, const T* src, int64_t n) {
  const int64_t vectors = n / 16 * 16;
  for (int64_t j = 0; j < vectors; j += 16) kernels::store(acc + j, kernels::add(kernels::load(acc + j), load_lanes(src + j)));
  for (int64_t j = vectors; j < n; ++j) acc[j] += static_cast<float>(src[j]);
}

template <class T>
struct SumFold {
  using C = compute_t<T>;
  using Acc = acc_t<C>;
  Acc init() const { return 0; }
  Acc step(Acc a, C v, int64_t) const { return a + static_cast<Acc>(v); }
  Acc combine(Acc a, Acc b) const { return a + b; }
  Acc fold(const T* p, int64_t n, int64_t) const {
    if constexpr (kFloatLanes<T>) {
      // Four 16-lane float accumulators over blocks of 1024, each block added into a double:
      // streams at memory speed and keeps the error of a blocked (near pairwise) sum. Vec16f
      // sums in the same order on every target, so every build gives the same bits.
      using kernels::Vec16f, kernels::add;
      double total = 0;
      int64_t i = 0;
      while (i + 64 <= n) {
        const int64_t block_end = std::min(n - (n - i) % 64, i + 1024);
        Vec16f a0 = kernels::splat(0.0f), a1 = a0, a2 = a0, a3 = a0;
        for (; i < block_end; i += 64) {
          a0 = add(a0, load_lanes(p + i));
          a1 = add(a1, load_lanes(p + i + 16));
          a2 = add(a2, load_lanes(p + i + 32));
          a3 = add(a3, load_lanes(p + i + 48));
        }
        total += kernels::reduce_add(add(add(a0, a1), add(a2, a3)));
      }
      for (; i < n; ++i) total += static_cast<float>(p[i]);
      return total;
    }
    Acc a = 0;
    for (int64_t i = 0; i < n; ++i) a += static_cast<Acc>(static_cast<C>(p[i]));
    return a;
  }
  /// Column sums of `rows` rows of n (row i at x + i·row_stride), added into acc(j, partial)
  /// for float32, bfloat16 and float16, in a chunk of columns that stays in L1: blocks of
  /// kBlockRows rows summed in float lanes, kBlocks blocks' sums added up in float, and those
  /// added into the double accumulators. Two levels of 64 and 16 terms, where one level of 1024
  /// rows summed 5M rows of 0.1 to 499995.16 (torch 1.13: 499999.56, exact 500000.0075); adding
  /// every 64 rows' sums into the doubles instead cost bfloat16 a fifth of its speed.
  /// A bias gradient is such a sum; widening every element to double instead took four times as
  /// long, bfloat16 at a quarter of the cache's bandwidth. The same steps on every target.
  template <class AddInto>
  void fold_columns(const T* x, int64_t rows, int64_t row_stride, int64_t n, AddInto acc) const
    requires kFloatLanes<T>
  {
    constexpr int64_t kBlockRows = 64, kBlocks = 16, kChunk = 1024;
    float partial[kChunk], blocks[kChunk];
    for (int64_t j0 = 0; j0 < n; j0 += kChunk) {
      const int64_t nj = std::min(kChunk, n - j0);
      for (int64_t i0 = 0; i0 < rows; i0 += kBlockRows * kBlocks) {
        std::fill(blocks, blocks + nj, 0.0f);
        for (int64_t b0 = i0; b0 < std::min(rows, i0 + kBlockRows * kBlocks); b0 += kBlockRows) {
          std::fill(partial, partial + nj, 0.0f);
          for (int64_t i = b0; i < std::min(rows, b0 + kBlockRows); ++i) add_lanes(partial, x + i * row_stride + j0, nj);
          add_lanes(blocks, partial, nj);
        }
        for (int64_t j = 0; j < nj; ++j) acc(j0 + j, blocks[j]);
      }
    }
  }
};

template <class T>
struct ProdFold {
  using C = compute_t<T>;
  using Acc = acc_t<C>;
  Acc init() const { return 1; }
  Acc step(Acc a, C v, int64_t) const { return a * static_cast<Acc>(v); }
  Acc combine(Acc a, Acc b) const { return a * b; }
  Acc fold(const T* p, int64_t n, int64_t) const {
    // 32 running products, multiplied together pairwise at the end: one chain waits on every
    // multiply's latency (a [2048, 2048] prod(1) took 1.5 ms, PyTorch 0.09), and the compiler
    // keeps eight doubles in a vector, so four vectors' chains are what hides it (eight
    // products gave 0.23 ms).
    constexpr int kChains = 32;
    Acc a[kChains];
    for (Acc& x : a) x = 1;
    int64_t i = 0;
    for (; i + kChains <= n; i += kChains)
      for (int k = 0; k < kChains; ++k) a[k] *= static_cast<Acc>(static_cast<C>(p[i + k]));
    for (; i < n; ++i) a[0] *= static_cast<Acc>(static_cast<C>(p[i]));
    for (int width = kChains / 2; width > 0; width /= 2)
      for (int k = 0; k < width; ++k) a[k] *= a[k + width];
    return a[0];
  }
};

/// Running extreme with its first index; NaN wins and sticks (PyTorch's max/argmax rule).
template <class T, bool IsMax>
struct ExtremeFold {
  using C = compute_t<T>;
  struct Acc {
    C value;
    int64_t index;
    bool seen;
  };
  Acc init() const { return {C{}, -1, false}; }
  static bool is_nan(C v) {
    if constexpr (std::is_floating_point_v<C>) return std::isnan(v);
    else return false;
  }
  static bool better(C v, C best) {
    if (is_nan(best)) return false;
    if (is_nan(v)) return true;
    return IsMax ? v > best : v < best;
  }
  Acc step(Acc a, C v, int64_t i) const {
    if (!a.seen || better(v, a.value)) return {v, i, true};
    return a;
  }
  Acc combine(Acc a, Acc b) const {
    if (!a.seen) return b;
    if (!b.seen) return a;
    if (better(b.value, a.value)) return b;
    return a;
  }
  Acc fold(const T* p, int64_t n, int64_t base) const {
    Acc a = init();
    for (int64_t i = 0; i < n; ++i) a = step(a, static_cast<C>(p[i]), base + i);
    return a;
  }
};

/// amax and amin: the extreme value alone (argmax and argmin keep its index, ExtremeFold). NaN
/// wins and sticks, and of equal values the first stays, as there; float32 and 16-bit float
/// slices go 64 lanes at a time (a [2048, 2048] amax(1) took 1.5 ms, PyTorch 0.12).
template <class T, bool IsMax>
struct ValueExtremeFold {
  using C = compute_t<T>;
  using Acc = C;
  Acc init() const {
    if constexpr (std::is_floating_point_v<C>) return IsMax ? -std::numeric_limits<C>::infinity() : std::numeric_limits<C>::infinity();
    else return IsMax ? std::numeric_limits<C>::lowest() : std::numeric_limits<C>::max();
  }
  Acc step(Acc a, C v, int64_t) const { return ExtremeFold<T, IsMax>::better(v, a) ? v : a; }
  Acc combine(Acc a, Acc b) const { return step(a, b, 0); }
  Acc fold(const T* p, int64_t n, int64_t) const {
    Acc a = init();
    int64_t i = 0;
    if constexpr (kFloatLanes<T>) {
      if (n >= 64) {
        // pick(acc, v): v's NaN or the accumulator's stays; of equal lanes the accumulator's.
        auto pick = [](kernels::Vec16f acc, kernels::Vec16f v) { return IsMax ? kernels::max_nan(v, acc) : kernels::min_nan(v, acc); };
        kernels::Vec16f a0 = kernels::splat(static_cast<float>(init())), a1 = a0, a2 = a0, a3 = a0;
        for (; i + 64 <= n; i += 64) {
          a0 = pick(a0, load_lanes(p + i));
          a1 = pick(a1, load_lanes(p + i + 16));
          a2 = pick(a2, load_lanes(p + i + 32));
          a3 = pick(a3, load_lanes(p + i + 48));
        }
        float lanes[16];
        kernels::store(lanes, pick(pick(a0, a1), pick(a2, a3)));
        for (float lane : lanes) a = step(a, lane, 0);
      }
    }
    for (; i < n; ++i) a = step(a, static_cast<C>(p[i]), i);
    return a;
  }
};

template <class T, bool IsAny>
struct LogicalFold {
  using C = compute_t<T>;
  using Acc = bool;
  Acc init() const { return !IsAny; }
  Acc step(Acc a, C v, int64_t) const { return IsAny ? (a || v != C(0)) : (a && v != C(0)); }
  Acc combine(Acc a, Acc b) const { return IsAny ? (a || b) : (a && b); }
  /// Nonzero counts over blocks, which GCC vectorises, and the answer as soon as a block settles
  /// it (a [2048, 2048] any() took 1.0 ms one short-circuit step at a time).
  Acc fold(const T* p, int64_t n, int64_t) const {
    constexpr int64_t kBlock = 256;
    for (int64_t i = 0; i < n; i += kBlock) {
      const int64_t m = std::min(kBlock, n - i);
      int64_t nonzero = 0;
      for (int64_t j = 0; j < m; ++j) nonzero += kernels::nonzero_at(p + i, j);
      if (IsAny ? nonzero > 0 : nonzero < m) return IsAny;
    }
    return !IsAny;
  }
};

enum class Output { Value, Index };

/// Integer and bool sums and products are int64, as in PyTorch.
template <class T> using widened_int_t = std::conditional_t<std::is_integral_v<T>, int64_t, T>;
/// any/all give bool, except on uint8 (PyTorch keeps uint8 there).
template <class T> using logical_out_t = std::conditional_t<std::is_same_v<T, uint8_t>, uint8_t, bool>;

/// The gradient split evenly among the elements `hit` marks in each reduced slice.
Tensor split_among(const Tensor& g, const Tensor& hit, IntArrayRef dims) {
  const Tensor h = hit.to(g.dtype());
  return g * h / sum(h, dims, true);
}
/// amax/amin send the gradient to the extreme elements, split evenly among ties (PyTorch's rule).
Tensor split_among_ties(const Tensor& g, const Tensor& x, const Tensor& out, IntArrayRef dims) { return split_among(g, x == out, dims); }

struct SumDef {
  static constexpr bool picks_an_element = false;
  static constexpr std::string_view name = "sum";
  static constexpr auto cuda_op = kernels::cuda::ReduceOp::Sum;
  static constexpr bool backward_reads_values = false;  // the gradient is broadcast back, by shape
  template <class T> using Fold = SumFold<T>;
  template <class T> using Out = widened_int_t<T>;
  static constexpr Output output = Output::Value;
  // Every summed element receives the result's gradient.
  static constexpr bool reads_x = false, reads_out = false;  // Note [Saved tensors]
  static Tensor grad(const Tensor& g, const Tensor&, const Tensor&, IntArrayRef) { return g; }
};
struct ProdDef {
  static constexpr bool picks_an_element = false;
  static constexpr std::string_view name = "prod";
  static constexpr auto cuda_op = kernels::cuda::ReduceOp::Prod;
  template <class T> using Fold = ProdFold<T>;
  template <class T> using Out = widened_int_t<T>;
  static constexpr Output output = Output::Value;
  // d Πx / dx_i = Π_{j≠i} x_j. That is out / x_i when the slice has no zero. With zeros it comes
  // from the product of the slice's nonzero elements: a lone zero gets that product and every
  // other element 0; with two or more zeros every derivative is 0 (PyTorch's rule).
  static constexpr bool reads_x = true, reads_out = true;  // Note [Saved tensors]
  static Tensor grad(const Tensor& g, const Tensor& x, const Tensor& out, IntArrayRef dims) {
    const Tensor is_zero = x.eq(0);
    if (!is_zero.any().item<bool>()) return g * out / x;
    const Tensor safe = x.masked_fill(is_zero, 1);
    const Tensor nonzero_product = prod(safe, dims, true);
    const Tensor zeros_in_slice = sum(is_zero, dims, true);
    const Tensor none = zeros_like(nonzero_product);
    const Tensor at_zero = where(zeros_in_slice.eq(1), nonzero_product, none);
    const Tensor elsewhere = where(zeros_in_slice.eq(0), nonzero_product / safe, none);
    return g * where(is_zero, at_zero, elsewhere);
  }
};
struct AmaxDef {
  static constexpr bool picks_an_element = true;
  static constexpr std::string_view name = "amax";
  static constexpr auto cuda_op = kernels::cuda::ReduceOp::Amax;
  template <class T> using Fold = ValueExtremeFold<T, true>;
  template <class T> using Out = T;
  static constexpr Output output = Output::Value;
  static constexpr bool reads_x = true, reads_out = true;  // Note [Saved tensors]
  static Tensor grad(const Tensor& g, const Tensor& x, const Tensor& out, IntArrayRef dims) { return split_among_ties(g, x, out, dims); }
};
struct AminDef {
  static constexpr bool picks_an_element = true;
  static constexpr std::string_view name = "amin";
  static constexpr auto cuda_op = kernels::cuda::ReduceOp::Amin;
  template <class T> using Fold = ValueExtremeFold<T, false>;
  template <class T> using Out = T;
  static constexpr Output output = Output::Value;
  static constexpr bool reads_x = true, reads_out = true;  // Note [Saved tensors]
  static Tensor grad(const Tensor& g, const Tensor& x, const Tensor& out, IntArrayRef dims) { return split_among_ties(g, x, out, dims); }
};
/// max(x, dim) and min(x, dim) send the gradient to the element whose index they return (the first
/// of ties), as PyTorch's; amax and amin split it among the ties.
template <bool IsMax>
Tensor to_returned_index(const Tensor& g, const Tensor& x, const Tensor&, IntArrayRef dims) {
  if (dims.empty()) return g;  // a 0-dim x: its one element is the one returned
  const int64_t dim = dims[0];
  const Tensor index = IsMax ? argmax(x, dim, true) : argmin(x, dim, true);
  DimVector shape(static_cast<size_t>(x.dim()), 1);
  shape[static_cast<size_t>(dim)] = x.size(dim);
  const Tensor position = arange(x.size(dim), TensorOptions(kInt64).device(x.device())).view(shape);
  return g * (position == index).to(g.dtype());
}
/// The values of max(x, dim) and min(x, dim): amax's and amin's folds, the returned index's gradient.
template <class Extreme, bool IsMax>
struct ValuesAtIndexDef : Extreme {
  using Kernel = Extreme;  // the same fold: amax's and amin's compiled kernels serve
  static constexpr std::string_view name = IsMax ? "max" : "min";
  static constexpr bool reads_x = true, reads_out = false;  // Note [Saved tensors]
  static Tensor grad(const Tensor& g, const Tensor& x, const Tensor& out, IntArrayRef dims) { return to_returned_index<IsMax>(g, x, out, dims); }
};
using MaxDimDef = ValuesAtIndexDef<AmaxDef, true>;
using MinDimDef = ValuesAtIndexDef<AminDef, false>;
/// max() and min() of every element: amax's and amin's folds with PyTorch's
/// evenly_distribute_backward, which splits the gradient among the ties as amax does, except that a
/// NaN result sends it to the NaN elements (x == out finds none there, and amax's gradient, as
/// PyTorch's, is NaN everywhere).
template <class Extreme, bool IsMax>
struct WholeExtremeDef : Extreme {
  using Kernel = Extreme;  // the same fold: amax's and amin's compiled kernels serve
  static constexpr std::string_view name = IsMax ? "max" : "min";
  static constexpr bool reads_x = true, reads_out = true;  // Note [Saved tensors]
  static Tensor grad(const Tensor& g, const Tensor& x, const Tensor& out, IntArrayRef dims) {
    return split_among(g, where(out != out, x != x, x == out), dims);
  }
};
using MaxAllDef = WholeExtremeDef<AmaxDef, true>;
using MinAllDef = WholeExtremeDef<AminDef, false>;

struct ArgmaxDef {
  static constexpr bool picks_an_element = true;
  static constexpr std::string_view name = "argmax";
  static constexpr auto cuda_op = kernels::cuda::ReduceOp::Argmax;
  template <class T> using Fold = ExtremeFold<T, true>;
  template <class T> using Out = int64_t;
  static constexpr Output output = Output::Index;
};
struct ArgminDef {
  static constexpr bool picks_an_element = true;
  static constexpr std::string_view name = "argmin";
  static constexpr auto cuda_op = kernels::cuda::ReduceOp::Argmin;
  template <class T> using Fold = ExtremeFold<T, false>;
  template <class T> using Out = int64_t;
  static constexpr Output output = Output::Index;
};
struct AnyDef {
  static constexpr bool picks_an_element = false;
  static constexpr std::string_view name = "any";
  static constexpr auto cuda_op = kernels::cuda::ReduceOp::Any;
  template <class T> using Fold = LogicalFold<T, true>;
  template <class T> using Out = logical_out_t<T>;
  static constexpr Output output = Output::Value;
};
struct AllDef {
  static constexpr bool picks_an_element = false;
  static constexpr std::string_view name = "all";
  static constexpr auto cuda_op = kernels::cuda::ReduceOp::All;
  template <class T> using Fold = LogicalFold<T, false>;
  template <class T> using Out = logical_out_t<T>;
  static constexpr Output output = Output::Value;
};

/// Which dims are reduced: `dims` wrapped and deduplicated, all of them when empty.
std::vector<bool> reduced_mask(const Tensor& x, IntArrayRef dims, std::string_view op) {
  if (dims.empty()) return std::vector<bool>(static_cast<size_t>(x.dim()), true);
  std::vector<bool> mask(static_cast<size_t>(std::max<int64_t>(x.dim(), 1)));  // a 0-d tensor's dim 0 (or -1) is checked too
  for (int64_t d : dims) {
    const int64_t w = maybe_wrap_dim(d, x.dim());
    TALLY_CHECK(!mask[w], "dim ", w, " appears multiple times in the list of dims");
    mask[w] = true;
  }
  mask.resize(static_cast<size_t>(x.dim()));
  return mask;
}

/// Which dims a reduction keeps and folds, and the result's sizes.
struct ReducePlan {
  std::vector<int64_t> kept, reduced;
  DimVector out_sizes;
  int64_t outer = 1, inner = 1;  // results, and elements folded into each
  ReducePlan(const Tensor& x, IntArrayRef dims, bool keepdim, std::string_view op) {
    const auto mask = reduced_mask(x, dims, op);
    for (int64_t d = 0; d < x.dim(); ++d) {
      if (mask[d]) {
        reduced.push_back(d);
        inner *= x.size(d);
        if (keepdim) out_sizes.push_back(1);
      } else {
        kept.push_back(d);
        outer *= x.size(d);
        out_sizes.push_back(x.size(d));
      }
    }
  }
};

/// The definition whose compiled kernel runs Def: its own, unless it names another with the same
/// fold (`using Kernel`), so that a definition differing only in name and gradient adds no kernel.
template <class Def> struct KernelDefOf { using type = Def; };
template <class Def> requires requires { typename Def::Kernel; } struct KernelDefOf<Def> { using type = typename Def::Kernel; };
template <class Def> using KernelDef = typename KernelDefOf<Def>::type;

template <class Def>
struct Reduce {
  static constexpr std::string_view name = Def::name;
  static constexpr bool backward_reads_values = ops::detail::backward_reads_values<Def>();
  static constexpr bool supports_cuda = true;
  static ops::OutputSpec meta(const Tensor& x, IntArrayRef dims, bool keepdim, Dtype in_dtype) {
    TALLY_CHECK_TYPE_ERROR(!is_float8(x.dtype()), "\"", Def::name, "\" not implemented for '", dtype_name(x.dtype()), "'");
    ReducePlan plan(x, dims, keepdim, Def::name);
    // A fold that picks an element (the extremes and their indices) has nothing to pick from an
    // empty slice.
    if constexpr (Def::picks_an_element) {
      if (x.numel() == 0) {
        TALLY_CHECK_INDEX(!dims.empty(), Def::name, "(): Expected reduction dim to be specified for input.numel() == 0. "
                          "Specify the reduction dim with the 'dim' argument (input sizes ", x.sizes(), ")");
        for (int64_t d : plan.reduced)
          TALLY_CHECK_INDEX(x.size(d) != 0, Def::name, "(): Expected reduction dim ", d, " to have non-zero size (input sizes ",
                            x.sizes(), ")");
      }
    }
    const Dtype out_dtype = dispatch(in_dtype, Def::name, [&]<class T>() { return dtype_of<typename Def::template Out<T>>(); });
    return {std::move(plan.out_sizes), out_dtype};
  }
  static void compute(const Tensor& out, const Tensor& x, IntArrayRef dims, bool keepdim, Dtype in_dtype) {
    Tensor src = x.to(in_dtype);
    const ReducePlan plan(src, dims, keepdim, Def::name);
    const int64_t outer = plan.outer, inner = plan.inner;
    std::vector<int64_t> order = plan.kept;  // rows: the kept dims, then the reduced ones
    order.insert(order.end(), plan.reduced.begin(), plan.reduced.end());
    if (out.is_cuda()) {  // rows of the reduced elements, packed; one kernel over them
      Tensor rows = src.permute(order).contiguous();
      Tensor scratch = empty({kernels::cuda::reduce_rows_scratch_bytes()}, TensorOptions(kUInt8).device(x.device()));
      kernels::cuda::reduce_rows(Def::cuda_op, static_cast<uint8_t>(src.dtype()), rows.data_ptr(), outer, inner,
                                 static_cast<uint8_t>(out.dtype()), out.data_ptr(), scratch.data_ptr());
      return;
    }
    // Rows: each result's inputs contiguous.
    Tensor rows = src.permute(order);
    if (auto s = geometry::view_strides(rows.sizes(), rows.strides(), {outer, inner}); inner == 0 || (s && (inner == 1 || (*s)[1] == 1))) {
      return cpu_kernels().run<&Reduce<KernelDef<Def>>::kernel>(rows.data_ptr(), outer, inner, s ? (*s)[0] : inner, false, src.dtype(), out.data_ptr());
    }
    // Columns: the results contiguous, inputs strided (a sum over dim 0).
    std::vector<int64_t> corder = plan.reduced;
    corder.insert(corder.end(), plan.kept.begin(), plan.kept.end());
    Tensor cols = src.permute(corder);
    if (auto s = geometry::view_strides(cols.sizes(), cols.strides(), {inner, outer}); s && (*s)[1] == 1) {
      return cpu_kernels().run<&Reduce<KernelDef<Def>>::kernel>(cols.data_ptr(), outer, inner, (*s)[0], true, src.dtype(), out.data_ptr());
    }
    Tensor packed = rows.contiguous();
    cpu_kernels().run<&Reduce<KernelDef<Def>>::kernel>(packed.data_ptr(), outer, inner, inner, false, src.dtype(), out.data_ptr());
  }
  /// outer results, each folding inner elements of x: rows `stride` apart (or, with `columns`,
  /// the results contiguous and the inner elements `stride` apart). Built once per target
  /// (Note [CPU kernel dispatch]).
  static void kernel(const void* x, int64_t outer, int64_t inner, int64_t stride, bool columns, Dtype dt, void* out) {
    dispatch(dt, Def::name, [&]<class T>() {
      using Fold = typename Def::template Fold<T>;
      Fold fold;
      using TO = typename Def::template Out<T>;
      TO* po = static_cast<TO*>(out);
      auto store = [&](int64_t o, typename Fold::Acc acc) {
        if constexpr (Def::output == Output::Index) po[o] = static_cast<TO>(acc.index);
        else if constexpr (requires { acc.value; }) po[o] = cast_to<TO>(acc.value);
        else po[o] = cast_to<TO>(acc);
      };
      const T* px = static_cast<const T*>(x);
      if (inner == 0) {
        for (int64_t o = 0; o < outer; ++o) store(o, fold.init());
      } else if (columns) {
        kernels::reduce_columns(px, inner, stride, outer, fold, store);
      } else {
        kernels::reduce_rows(px, outer, stride, inner, fold, store);
      }
    });
  }
  static ops::Cost cost(const Tensor& out, const Tensor& x, IntArrayRef, bool, Dtype) {
    return {x.numel(), ops::bytes_held(x), out.nbytes()};  // Note [Bytes read]
  }
  static ops::SavedTensors saved(const SmallVector<bool, 4>&)
    requires requires { Def::reads_x; }
  {
    return {{Def::reads_x}, Def::reads_out};
  }
  static TensorList backward(const ops::BackwardContext& c, const Tensor& x, IntArrayRef dims, bool keepdim, Dtype)
    requires requires { &Def::grad; }
  {
    // Put the reduced dims back as size 1, then broadcast over them.
    const auto mask = reduced_mask(x, dims, Def::name);
    Tensor g = c.grad, out = c.out;
    std::vector<int64_t> reduced;
    for (int64_t d = 0; d < x.dim(); ++d) {
      if (!mask[d]) continue;
      reduced.push_back(d);
      if (!keepdim) {
        g = g.unsqueeze(d);
        out = out.unsqueeze(d);
      }
    }
    return {Def::grad(g.expand(x.sizes()), x, out.expand(x.sizes()), reduced).to(x.dtype())};
  }
};

template <class Def>
Tensor reduce(const Tensor& given, IntArrayRef dims, bool keepdim, std::optional<Dtype> dtype = std::nullopt) {
  // Autocast first, so that a float32 reduction (sum, prod) also returns float32 unless the
  // caller named a dtype (Note [Autocast]).
  Tensor x = given;
  const ops::AutocastRegion autocast(Def::name, {&x});
  return ops::apply<Reduce<Def>>(x, dims, keepdim, dtype.value_or(x.dtype()));
}

}  // namespace

#if TALLY_PRIMARY_PASS
namespace {
/// A sum's result in the dtype the caller named, as PyTorch's. Integers and bools are summed in
/// int64 (the kernels' accumulator), which wraps as the named type would: the cast gives its result.
Tensor in_named_dtype(const Tensor& s, std::optional<Dtype> dtype) { return dtype && s.dtype() != *dtype ? s.to(*dtype) : s; }
}  // namespace

Tensor sum(const Tensor& x, std::optional<Dtype> dtype) { return in_named_dtype(reduce<SumDef>(x, {}, false, dtype), dtype); }
Tensor sum(const Tensor& x, IntArrayRef dims, bool keepdim, std::optional<Dtype> dtype) {
  return in_named_dtype(reduce<SumDef>(x, dims, keepdim, dtype), dtype);
}

Tensor mean(const Tensor& x, IntArrayRef dims, bool keepdim) {
  TALLY_CHECK_TYPE_ERROR(x.is_floating_point(), "mean(): could not infer output dtype. Input dtype must be either a floating "
                         "point or complex dtype. Got: ", dtype_name(x.dtype()));
  Tensor s = sum(x, dims, keepdim);
  const int64_t n = x.numel() / std::max<int64_t>(s.numel(), 1);
  return s / (x.numel() == 0 ? 0.0 : static_cast<double>(s.numel() == 0 ? 0 : n));
}

Tensor prod(const Tensor& x, IntArrayRef dims, bool keepdim) { return reduce<ProdDef>(x, dims, keepdim); }
Tensor amax(const Tensor& x, IntArrayRef dims, bool keepdim) { return reduce<AmaxDef>(x, dims, keepdim); }
Tensor amin(const Tensor& x, IntArrayRef dims, bool keepdim) { return reduce<AminDef>(x, dims, keepdim); }
Tensor any(const Tensor& x, IntArrayRef dims, bool keepdim) { return reduce<AnyDef>(x, dims, keepdim); }
Tensor all(const Tensor& x, IntArrayRef dims, bool keepdim) { return reduce<AllDef>(x, dims, keepdim); }

namespace {
/// argmax/argmin: over `dim`, or over the flattened tensor when absent, which with keepdim
/// keeps every dim as size 1 (torch 1.13: argmax of a [2, 3] tensor with keepdim is [1, 1]).
template <class Def>
Tensor arg_extreme(const Tensor& x, std::optional<int64_t> dim, bool keepdim) {
  TALLY_CHECK_TYPE_ERROR(x.dtype() != kBool, "\"", Def::name, "_cpu\" not implemented for 'Bool'");
  if (dim) return reduce<Def>(x, {*dim}, keepdim);
  TALLY_CHECK_INDEX(x.numel() > 0, Def::name, "(): Expected reduction dim to be specified for input.numel() == 0.");
  const Tensor i = reduce<Def>(x.reshape({-1}), {0}, false);
  return keepdim ? i.reshape(DimVector(static_cast<size_t>(x.dim()), 1)) : i;
}
}  // namespace

// PyTorch refuses bool for argmax and argmin, though max(x, dim) on bool returns indices.
Tensor argmax(const Tensor& x, std::optional<int64_t> dim, bool keepdim) { return arg_extreme<ArgmaxDef>(x, dim, keepdim); }
Tensor argmin(const Tensor& x, std::optional<int64_t> dim, bool keepdim) { return arg_extreme<ArgminDef>(x, dim, keepdim); }
std::tuple<Tensor, Tensor> max(const Tensor& x, int64_t dim, bool keepdim) {
  return {reduce<MaxDimDef>(x, {dim}, keepdim), reduce<ArgmaxDef>(x, {dim}, keepdim)};
}
std::tuple<Tensor, Tensor> min(const Tensor& x, int64_t dim, bool keepdim) {
  return {reduce<MinDimDef>(x, {dim}, keepdim), reduce<ArgminDef>(x, {dim}, keepdim)};
}

Tensor var(const Tensor& x, IntArrayRef dims, int64_t correction, bool keepdim) {
  TALLY_CHECK_TYPE_ERROR(x.is_floating_point(), "std and var only support floating point and complex dtypes, got ",
                         dtype_name(x.dtype()));
  // Two passes, composed of ops so the ledger sees each: deviations from the mean, then their squares' sum.
  // float16 and bfloat16 are centred, squared, summed and divided in float32 and rounded once, as
  // PyTorch accumulates them: in float16 a square or the sum passes 65504 long before the variance
  // does (1000 values of ±30 gave inf), and so does the mean's count (100000 values of 0.1 had a
  // mean of 0 and a variance of 0.01 where torch's is 0).
  const Tensor wide = x.to(promote_types(x.dtype(), kFloat32));
  Tensor ss = sum(square(wide - mean(wide, dims, true)), dims, keepdim);
  const int64_t n = x.numel() / std::max<int64_t>(ss.numel(), 1);
  if (n - correction <= 0)
    TALLY_WARN_ONCE("var(): degrees of freedom is <= 0. Correction should be strictly less than the reduction factor "
                    "(input numel divided by output numel): correction ", correction, ", reduction factor ", n, " (input of shape ",
                    x.sizes(), ")");
  return (ss / static_cast<double>(std::max<int64_t>(n - correction, 0))).to(x.dtype());
}

Tensor std(const Tensor& x, IntArrayRef dims, int64_t correction, bool keepdim) {
  // torch's std_backward gives 0 where the result is 0 (a constant slice), where sqrt's own rule
  // would give 0·∞ = NaN.
  return ops::zero_at_zero(var(x, dims, correction, keepdim), [](const Tensor& v) { return sqrt(v); });
}

Tensor logsumexp(const Tensor& x, IntArrayRef dims, bool keepdim) {
  const ReducePlan plan(x, dims, keepdim, "logsumexp");
  const Tensor f = x.is_floating_point() ? x : x.to(kFloat32);
  // The shift is a constant to autograd: d/dx [log Σ exp(x − m) + m] is softmax(x) for any m. An
  // infinite max shifts by 0 instead, so that a slice of −inf gives −inf, not NaN; so does a slice
  // of no element (no max to shift by), whose sum is 0 and whose log is −inf, as torch's.
  if (plan.inner == 0) return log(sum(exp(f), dims, keepdim));
  const Tensor m = amax(f, dims, true).detach();
  const Tensor shift = where(eq(abs(m), scalar_tensor(INFINITY, m.options())), zeros({}, m.options()), m);
  return (log(sum(exp(f - shift), dims, true)) + shift).view(plan.out_sizes);
}

Tensor sum_to_size(const Tensor& x, IntArrayRef sizes) {
  if (x.sizes() == sizes) return x;
  const int64_t lead = x.dim() - static_cast<int64_t>(sizes.size());
  TALLY_CHECK(lead >= 0, "sum_to_size: size ", sizes, " is not expandable to size ", x.sizes());
  std::vector<int64_t> dims;
  for (int64_t d = 0; d < x.dim(); ++d) {
    if (d < lead) dims.push_back(d);
    else if (sizes[d - lead] == 1 && x.size(d) != 1) dims.push_back(d);
    else TALLY_CHECK(sizes[d - lead] == x.size(d), "sum_to_size: size ", sizes, " is not expandable to size ", x.sizes());
  }
  Tensor s = dims.empty() ? x : sum(x, dims, true);
  return s.view(sizes);
}

Tensor Tensor::sum() const { return tally::sum(*this); }
Tensor Tensor::sum(IntArrayRef dims, bool keepdim) const { return tally::sum(*this, dims, keepdim); }
Tensor Tensor::mean() const { return tally::mean(*this); }
Tensor Tensor::mean(IntArrayRef dims, bool keepdim) const { return tally::mean(*this, dims, keepdim); }
Tensor Tensor::prod() const { return tally::prod(*this); }
Tensor Tensor::prod(int64_t dim, bool keepdim) const { return tally::prod(*this, {dim}, keepdim); }
Tensor Tensor::max() const {
  TALLY_CHECK(numel() > 0, "max(): Expected reduction dim to be specified for input.numel() == 0. Specify the reduction dim with the 'dim' argument.");
  return reduce<MaxAllDef>(*this, {}, false);
}
std::tuple<Tensor, Tensor> Tensor::max(int64_t dim, bool keepdim) const { return tally::max(*this, dim, keepdim); }
Tensor Tensor::min() const {
  TALLY_CHECK(numel() > 0, "min(): Expected reduction dim to be specified for input.numel() == 0. Specify the reduction dim with the 'dim' argument.");
  return reduce<MinAllDef>(*this, {}, false);
}
std::tuple<Tensor, Tensor> Tensor::min(int64_t dim, bool keepdim) const { return tally::min(*this, dim, keepdim); }
Tensor Tensor::amax(IntArrayRef dims, bool keepdim) const { return tally::amax(*this, dims, keepdim); }
Tensor Tensor::amin(IntArrayRef dims, bool keepdim) const { return tally::amin(*this, dims, keepdim); }
Tensor Tensor::argmax(std::optional<int64_t> dim, bool keepdim) const { return tally::argmax(*this, dim, keepdim); }
Tensor Tensor::argmin(std::optional<int64_t> dim, bool keepdim) const { return tally::argmin(*this, dim, keepdim); }
Tensor Tensor::any() const { return tally::any(*this); }
Tensor Tensor::any(int64_t dim, bool keepdim) const { return tally::any(*this, {dim}, keepdim); }
Tensor Tensor::all() const { return tally::all(*this); }
Tensor Tensor::all(int64_t dim, bool keepdim) const { return tally::all(*this, {dim}, keepdim); }
Tensor Tensor::var(IntArrayRef dims, int64_t correction, bool keepdim) const { return tally::var(*this, dims, correction, keepdim); }
Tensor Tensor::std(IntArrayRef dims, int64_t correction, bool keepdim) const { return tally::std(*this, dims, correction, keepdim); }

#endif  // TALLY_PRIMARY_PASS

}  // namespace tally

TALLY_CPU_KERNELS(reduce, &Reduce<SumDef>::kernel, &Reduce<ProdDef>::kernel, &Reduce<AmaxDef>::kernel, &Reduce<AminDef>::kernel,
                  &Reduce<ArgmaxDef>::kernel, &Reduce<ArgminDef>::kernel, &Reduce<AnyDef>::kernel, &Reduce<AllDef>::kernel)
