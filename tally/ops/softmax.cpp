// softmax / log_softmax along one dim, fused: each row is read from memory once and written
// once (max, exp-sum and scale passes run on the row while it sits in cache), in float32 for the
// 16-bit floats (float64 for float64) and rounded once. Declared cost: 5 FLOPs per element (max,
// subtract, exp, sum, divide or log-subtract), input read once, output written once. Attention's
// probabilities are the same op with a scale and a causal mask applied inside the row pass, and
// softmax's backward is one more row op, so neither the scaled scores, the mask nor the
// backward's products are ever written to memory.

#include "tally/ops/softmax.h"

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <limits>

#include "tally/kernels/cpu/dispatch.h"
#include "tally/kernels/cpu/parallel.h"
#include "tally/kernels/cpu/rows.h"
#include "tally/kernels/cpu/vec_math.h"
#include "tally/kernels/cuda/kernels.h"
#include "tally/ops/apply.h"
#include "tally/ops/creation.h"
#include "tally/ops/elementwise.h"
#include "tally/ops/reduce.h"

namespace tally {

namespace {

/// Outputs above this size are written with streaming stores (bigger than this CPU's caches).
constexpr int64_t kStreamingBytes = int64_t{64} << 20;

using ops::detail::RowLayout;

/// Where row `row` starts, in elements.
int64_t row_offset(const RowLayout& l, int64_t row) {
  return l.per_batch ? (row / l.per_batch) * l.batch_stride + (row % l.per_batch) * l.ld : row * l.ld;
}

/// Plain rows of n elements one after another.
RowLayout dense_rows(int64_t n) { return {n, 0, 0}; }

/// What the row kernels are told: `rows` rows of n elements, laid out in x and y as `in` and
/// `out` say, softmax of scale·x, and with `causal_rows` set, a causal mask over each block of
/// that many rows: row r sees the columns up to first_row + r mod causal_rows (PyTorch's
/// is_causal, the upper-left triangle; first_row > 0 for a block of rows cut from further down).
struct SoftmaxRows {
  int64_t rows = 0;
  int64_t n = 0;
  RowLayout in;
  RowLayout out;
  int64_t causal_rows = 0;
  int64_t first_row = 0;
  double scale = 1;
  bool log = false;
  /// y is larger than the caches: its float32 stores bypass them, saving the read-for-ownership
  /// of every output line (y is written once and not read here).
  bool stream = false;
};

/// Columns of row `row` the mask lets through.
int64_t visible(const SoftmaxRows& r, int64_t row) {
  return r.causal_rows ? std::min(r.n, r.first_row + row % r.causal_rows + 1) : r.n;
}

/// What softmax's backward kernel is told: rows of n elements of g, y and dx, each in its own
/// layout, and the scale the forward applied.
struct SoftmaxGradRows {
  int64_t rows = 0;
  int64_t n = 0;
  RowLayout g;
  RowLayout y;
  RowLayout dx;
  double scale = 1;
};

/// One row, in its compute type, three passes while the row sits in cache: the max; exp(s·x − m)
/// into a scratch row, with its sum; then y = scratch / sum (or s·x − m − log sum). Masked
/// columns get 0 (−inf for log_softmax).
template <class T>
void softmax_row(const T* x, T* y, int64_t row, const SoftmaxRows& r, kernels::RowScratch<compute_t<T>>& in,
                 kernels::RowScratch<compute_t<T>>& tmp) {
  using C = compute_t<T>;
  using L = kernels::RowLanes<C>;
  using namespace kernels;
  const int64_t v = visible(r, row);
  const C* xr = widen_row(x, in, v);
  C* e = tmp.reserve(r.n);
  const C scale = static_cast<C>(r.scale);
  C m = row_max(xr, v) * scale;  // scale > 0 (meta): the max of s·x is s times the max of x
  if (std::isinf(m) && m < 0) m = 0;  // an all −inf row gives NaN as in PyTorch (0/0), not a crash
  const auto vs = L::splat(scale), vm = L::splat(m);
  const C sum = row_sum<C>(v, [&](int64_t i, int64_t k) {
    const auto ex = L::exp(sub(mul(L::load(xr + i, k), vs), vm));
    L::store(e + i, ex, k);
    return ex;
  });
  const auto vshift = L::splat(static_cast<C>(r.log ? m + std::log(sum) : 0)), vinv = L::splat(static_cast<C>(1 / static_cast<double>(sum)));
  C* out = out_row(y, tmp, r.n);  // for a 16-bit row the scratch row itself: y's values overwrite e in place, then are rounded
  for_blocks<C>(v, [&](int64_t i, int64_t k) {
    const auto val = r.log ? sub(mul(L::load(xr + i, k), vs), vshift) : mul(L::load(e + i, k), vinv);
    if constexpr (std::is_same_v<T, float>) {
      if (r.stream && k == 16 && reinterpret_cast<uintptr_t>(out + i) % 64 == 0) {
        kernels::stream(out + i, val);
        return;
      }
    }
    L::store(out + i, val, k);
  });
  const C masked = r.log ? -std::numeric_limits<C>::infinity() : C(0);
  for (int64_t i = v; i < r.n; ++i) out[i] = masked;
  narrow_row(out, y, r.n);
}

/// One row of softmax's gradient: dx = s·y·(g − Σ g·y).
template <class T>
void softmax_backward_row(const T* g, const T* y, T* dx, int64_t n, double scale, kernels::RowScratch<compute_t<T>>& gin,
                          kernels::RowScratch<compute_t<T>>& yin, kernels::RowScratch<compute_t<T>>& res) {
  using C = compute_t<T>;
  using L = kernels::RowLanes<C>;
  using namespace kernels;
  const C* gr = widen_row(g, gin, n);
  const C* yr = widen_row(y, yin, n);
  C* out = out_row(dx, res, n);
  const auto vdot = L::splat(row_sum<C>(n, [&](int64_t i, int64_t k) { return mul(L::load(gr + i, k), L::load(yr + i, k)); }));
  const auto vs = L::splat(static_cast<C>(scale));
  for_blocks<C>(n, [&](int64_t i, int64_t k) { L::store(out + i, mul(vs, mul(L::load(yr + i, k), sub(L::load(gr + i, k), vdot))), k); });
  narrow_row(out, dx, n);
}

/// x with `dim` last and its rows contiguous (a view when they already are).
Tensor rows_last(const Tensor& x, int64_t dim) { return x.dim() == 0 ? x.reshape({1}) : x.transpose(dim, -1).contiguous(); }
/// How many rows of its last dim `rows` (from rows_last) holds.
int64_t row_count(const Tensor& rows) { return rows.size(-1) == 0 ? 0 : rows.numel() / rows.size(-1); }

/// Fill `out` through rows laid out as rows_last(out, dim): directly when out's rows are
/// contiguous that way, else through a temporary copied back.
template <class Fill>
void write_rows(const Tensor& out, int64_t dim, Fill fill) {
  Tensor dst = out.dim() == 0 ? out.view({1}) : out.transpose(dim, -1);
  Tensor rows = dst.is_contiguous() ? dst : empty(dst.sizes(), out.options());
  fill(rows);
  if (!rows.is_same(dst)) dst.copy_(rows);
}

struct SoftmaxBackward;

struct Softmax {
  static constexpr std::string_view name = "softmax";
  static constexpr bool supports_cuda = true;
  static ops::OutputSpec meta(const Tensor& x, int64_t dim, bool log, double scale, bool causal) {
    TALLY_CHECK_TYPE_ERROR(x.is_floating_point() && !is_float8(x.dtype()), log ? "\"log_softmax_lastdim_kernel_impl\"" : "\"softmax_lastdim_kernel_impl\"",
                           " not implemented for '", dtype_name(x.dtype()), "'");
    maybe_wrap_dim(dim, x.dim() == 0 ? 1 : x.dim());
    TALLY_CHECK(scale > 0 && std::isfinite(scale), "softmax: the scale of the scores must be positive and finite, got ", scale);
    TALLY_CHECK(!causal || (x.dim() >= 2 && maybe_wrap_dim(dim, x.dim()) == x.dim() - 1), "softmax: a causal mask needs [..., L, S] scores ",
                "and the last dim, got scores of shape ", x.sizes(), " and dim ", dim);
    return {DimVector(x.sizes()), x.dtype()};
  }
  static void compute(const Tensor& out, const Tensor& x, int64_t dim, bool log, double scale, bool causal) {
    if (x.dim() > 0) dim = maybe_wrap_dim(dim, x.dim());
    if (out.is_cuda()) {
      // The GPU kernel takes plain rows: scale and mask first, as ops of their own.
      Tensor s = scale == 1 ? x : x * scale;
      if (causal) s = s.masked_fill(ones({x.size(-2), x.size(-1)}, TensorOptions(kBool).device(x.device())).triu(1), -INFINITY);
      const Tensor src = rows_last(s, dim);
      const int64_t rows = row_count(src);
      write_rows(out, dim, [&](const Tensor& dst) {
        if (rows > 0) kernels::cuda::softmax_rows(static_cast<uint8_t>(x.dtype()), src.data_ptr(), dst.data_ptr(), rows, src.size(-1), log);
      });
      return;
    }
    const Tensor src = rows_last(x, dim);
    // Outputs larger than the last-level cache go straight to memory (SoftmaxRows::stream).
    const int64_t n = src.size(-1);
    const SoftmaxRows r{row_count(src), n, dense_rows(n), dense_rows(n), causal ? x.size(-2) : 0, 0, scale, log,
                        out.nbytes() > kStreamingBytes};
    write_rows(out, dim, [&](const Tensor& dst) { cpu_kernels().run<&Softmax::kernel>(src.data_ptr(), dst.data_ptr(), r, x.dtype()); });
  }
  /// The rows of x into y; built once per target (Note [CPU kernel dispatch]).
  static void kernel(const void* x, void* y, SoftmaxRows r, Dtype dt) {
    kernels::dispatch_rows(dt, "softmax", [&]<class T>() {
      const T* px = static_cast<const T*>(x);
      T* py = static_cast<T*>(y);
      kernels::parallel_for(r.rows, kernels::row_grain(r.n), [&](int64_t b, int64_t e) {
        kernels::RowScratch<compute_t<T>> in, tmp;
        for (int64_t row = b; row < e; ++row) softmax_row(px + row_offset(r.in, row), py + row_offset(r.out, row), row, r, in, tmp);
        if (r.stream) kernels::stream_fence();  // streamed stores visible before the op returns
      });
    });
  }
  // max, subtract, exp, sum, divide (or log-subtract); and the scale's multiply where it is not 1.
  static ops::Cost cost(const Tensor& out, const Tensor& x, int64_t, bool, double scale, bool) {
    return {ops::detail::softmax_flops_per_element(scale) * x.numel(), ops::bytes_held(x), out.nbytes()};
  }
  // softmax: dx = s·y·(g − Σ g·y); log_softmax: dx = g − softmax(x)·Σ g = g − exp(y)·Σ g: both
  // read the output only.
  static ops::SavedTensors saved(const SmallVector<bool, 4>&) { return {{false}, true}; }
  static TensorList backward(const ops::BackwardContext& c, const Tensor& x, int64_t dim, bool log, double scale, bool) {
    if (log) return {scale * (c.grad - exp(c.out) * sum(c.grad, {dim}, true))};
    return {ops::detail::softmax_backward(c.grad.to(c.out.dtype()), c.out, x.dim() == 0 ? 0 : maybe_wrap_dim(dim, x.dim()), scale)};
  }
};

/// softmax's gradient from its output: dx = s·y·(g − Σ g·y) along dim, one pass per row.
struct SoftmaxBackward {
  static constexpr std::string_view name = "softmax_backward";
  static constexpr bool supports_cuda = true;
  static ops::OutputSpec meta(const Tensor& g, const Tensor& y, int64_t, double) {
    TALLY_CHECK(g.sizes() == y.sizes() && g.dtype() == y.dtype(), "softmax_backward: gradient ", g.sizes(), " ", dtype_name(g.dtype()),
                " for an output ", y.sizes(), " ", dtype_name(y.dtype()));
    return {DimVector(y.sizes()), y.dtype()};
  }
  static void compute(const Tensor& out, const Tensor& g, const Tensor& y, int64_t dim, double scale) {
    if (out.is_cuda()) {
      Tensor(out).copy_(scale * y * (g - sum(g * y, {dim}, true)));
      return;
    }
    const Tensor gr = rows_last(g, dim), yr = rows_last(y, dim);
    const int64_t n = yr.size(-1);
    write_rows(out, dim, [&](const Tensor& dst) {
      const SoftmaxGradRows r{row_count(yr), n, dense_rows(n), dense_rows(n), dense_rows(n), scale};
      cpu_kernels().run<&SoftmaxBackward::kernel>(gr.data_ptr(), yr.data_ptr(), dst.data_ptr(), r, y.dtype());
    });
  }
  static void kernel(const void* g, const void* y, void* dx, SoftmaxGradRows r, Dtype dt) {
    kernels::dispatch_rows(dt, name, [&]<class T>() {
      kernels::parallel_for(r.rows, kernels::row_grain(r.n), [&](int64_t b, int64_t e) {
        kernels::RowScratch<compute_t<T>> gin, yin, res;
        for (int64_t row = b; row < e; ++row)
          softmax_backward_row(static_cast<const T*>(g) + row_offset(r.g, row), static_cast<const T*>(y) + row_offset(r.y, row),
                               static_cast<T*>(dx) + row_offset(r.dx, row), r.n, r.scale, gin, yin, res);
      });
    });
  }
  // g·y, its sum, g − Σ, ×y (4), and ×s where it is not 1.
  static ops::Cost cost(const Tensor& out, const Tensor& g, const Tensor& y, int64_t, double scale) {
    return {ops::detail::softmax_backward_flops_per_element(scale) * y.numel(), ops::bytes_held(g) + ops::bytes_held(y), out.nbytes()};
  }
  // Its own derivative, for gradients of gradients (Note [Higher-order gradients] in
  // autograd/engine.h). With dx = s·y·(g − Σ g·y): d/dg of the incoming G is this op again,
  // s·y·(G − Σ G·y); d/dy is s·(G·(g − Σ g·y) − g·Σ G·y).
  static TensorList backward(const ops::BackwardContext& c, const Tensor& g, const Tensor& y, int64_t dim, double scale) {
    TensorList grads(2);
    if (c.needs_grad(0)) grads[0] = ops::apply<SoftmaxBackward>(c.grad.to(y.dtype()), y, dim, scale);
    if (c.needs_grad(1)) grads[1] = scale * (c.grad * (g - sum(g * y, {dim}, true)) - g * sum(c.grad * y, {dim}, true));
    return grads;
  }
};

}  // namespace

#if TALLY_PRIMARY_PASS
Tensor softmax(const Tensor& x, int64_t dim) { return ops::apply<Softmax>(x, dim, false, 1.0, false); }
Tensor log_softmax(const Tensor& x, int64_t dim) { return ops::apply<Softmax>(x, dim, true, 1.0, false); }
Tensor attention_softmax(const Tensor& scores, double scale, bool is_causal) { return ops::apply<Softmax>(scores, int64_t{-1}, false, scale, is_causal); }
Tensor Tensor::softmax(int64_t dim) const { return tally::softmax(*this, dim); }

namespace ops::detail {

Tensor softmax_backward(const Tensor& g, const Tensor& y, int64_t dim, double scale) { return ops::apply<SoftmaxBackward>(g, y, dim, scale); }

void attention_probs_rows(Dtype dtype, const void* scores, RowLayout scores_rows, void* probs, RowLayout probs_rows, int64_t rows,
                          int64_t n, int64_t causal_rows, int64_t first_row, double scale) {
  const SoftmaxRows r{rows, n, scores_rows, probs_rows, causal_rows, first_row, scale, false, false};
  cpu_kernels().run<&Softmax::kernel>(scores, probs, r, dtype);
}

void softmax_backward_rows(Dtype dtype, const void* g, RowLayout g_rows, const void* y, RowLayout y_rows, void* dx, RowLayout dx_rows,
                           int64_t rows, int64_t n, double scale) {
  cpu_kernels().run<&SoftmaxBackward::kernel>(g, y, dx, SoftmaxGradRows{rows, n, g_rows, y_rows, dx_rows, scale}, dtype);
}

}  // namespace ops::detail
Tensor Tensor::log_softmax(int64_t dim) const { return tally::log_softmax(*this, dim); }

#endif  // TALLY_PRIMARY_PASS

}  // namespace tally

TALLY_CPU_KERNELS(softmax, &Softmax::kernel, &SoftmaxBackward::kernel)
