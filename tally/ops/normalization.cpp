// layer_norm and rms_norm as one op each over rows of the normalized size n, with their
// backward as one more: the input's gradient and, in the same pass over g and x, the sums over
// pieces of rows that the weight's and bias's gradients are made of (PyTorch's
// native_layer_norm_backward computes the three together too), which a sum then adds up.
// Each kernel reads a row once
// from memory and does its passes (mean, squared deviations, output) while the row sits in
// cache, where the same maths composed of elementwise ops makes about ten passes forward and
// twenty backward. Nothing but the input is kept for backward: mean and 1/σ are recomputed per
// row there, which costs a pass over a row in cache instead of two tensors of activations.
//
// Per row, with x̂ = (x − μ)·r, r = 1/√(σ² + ε) (μ = 0 for rms_norm), y = x̂·w + b,
// and gw = g·w:
//   ∂x = r·(gw − mean(gw) − x̂·mean(gw·x̂))      (rms_norm: without the mean(gw) term)
//   ∂w = Σ_rows g·x̂,   ∂b = Σ_rows g.
// On the GPU, where no fused kernel is written yet, the same rules run as elementwise ops.

#include "tally/ops/normalization.h"

#include <algorithm>
#include <cmath>
#include <optional>
#include <string>
#include <utility>

#include "tally/dtype/finfo.h"
#include "tally/kernels/cpu/dispatch.h"
#include "tally/kernels/cpu/parallel.h"
#include "tally/kernels/cpu/rows.h"
#include "tally/ops/apply.h"
#include "tally/ops/creation.h"
#include "tally/ops/elementwise.h"
#include "tally/ops/reduce.h"

namespace tally {

namespace {

/// What a kernel is told: `rows` contiguous rows of n elements, and ε.
struct NormRows {
  int64_t rows = 0;
  int64_t n = 0;
  double eps = 0;
};

/// A row's mean (0 without centering) and 1/√(σ² + ε), in its compute type.
template <class C>
struct RowStats {
  C mean;
  C rstd;
};

template <bool kCenter, class C>
RowStats<C> row_stats(const C* x, const NormRows& r) {
  using L = kernels::RowLanes<C>;
  using namespace kernels;
  const C mean = kCenter ? row_sum<C>(r.n, [&](int64_t i, int64_t m) { return L::load(x + i, m); }) / static_cast<C>(r.n) : C(0);
  // Deviations from the mean, not E[x²] − μ²: no cancellation on rows far from zero.
  const auto vmean = L::splat(mean);
  const C var = row_sum<C>(r.n, [&](int64_t i, int64_t m) {
                  const auto d = sub(L::load(x + i, m), vmean);
                  return mul(d, d);
                }) /
                static_cast<C>(r.n);
  return {mean, static_cast<C>(1.0 / std::sqrt(static_cast<double>(var) + r.eps))};
}

/// The last `dims` sizes of x: a norm's normalized shape.
IntArrayRef trailing(const Tensor& x, int64_t dims) { return {x.sizes().data() + (x.dim() - dims), static_cast<size_t>(dims)}; }

/// A norm's sizes: the last `dims` dims of x are a row.
NormRows rows_of(const Tensor& x, int64_t dims, std::optional<double> eps) {
  int64_t n = 1;
  for (int64_t size : trailing(x, dims)) n *= size;
  return {n == 0 ? 0 : x.numel() / n, n, eps.value_or(finfo(x.dtype()).eps)};
}

/// The dims [begin, end): with x.dim() − dims between them, a norm's leading dims and its normalized ones.
DimVector dim_range(int64_t begin, int64_t end) {
  DimVector d;
  for (int64_t i = begin; i < end; ++i) d.push_back(i);
  return d;
}
DimVector leading_dims(const Tensor& x, int64_t dims) { return dim_range(0, x.dim() - dims); }
DimVector normalized_dims(const Tensor& x, int64_t dims) { return dim_range(x.dim() - dims, x.dim()); }

/// A weight or bias in the kernels' compute type (float64 for float64, float32 otherwise), contiguous.
Tensor in_compute_type(const Tensor& t) {
  if (!t.defined()) return t;
  return t.to(t.dtype() == kFloat64 ? kFloat64 : kFloat32).contiguous();
}
const void* ptr_or_null(const Tensor& t) { return t.defined() ? t.data_ptr() : nullptr; }

/// The affine parameters' gradients a norm's backward computes beside the input's, as bits.
constexpr int64_t kGradWeight = 1, kGradBias = 2;

/// The dtype of a norm's partial sums over rows: its compute type.
Dtype partials_dtype(Dtype dt) { return dt == kFloat64 ? kFloat64 : kFloat32; }

/// Pieces of rows whose ∂w and ∂b partial sums a norm's backward keeps apart: enough for the
/// threads (two per thread), none smaller than the elementwise grain; one on a GPU.
int64_t affine_pieces(const NormRows& r, const Device& device) {
  if (device.is_cuda()) return 1;
  return std::clamp<int64_t>(r.rows * r.n / kernels::kElementwiseGrain, 1, std::max<int64_t>(1, std::min<int64_t>(r.rows, 2 * kernels::num_threads())));
}

/// t (x's sizes) summed over a norm's leading dims: the normalized shape.
Tensor sum_over_rows(const Tensor& t, const Tensor& x, int64_t dims) {
  const DimVector lead = leading_dims(x, dims);
  return lead.empty() ? t : sum(t, lead);
}

/// The rules above as elementwise ops, for devices without the fused kernels: x̂, and the mean
/// and 1/σ it came from.
struct Composed {
  Tensor xhat, rstd;
  Composed(const Tensor& x, int64_t dims, double eps, bool center) {
    const DimVector d = normalized_dims(x, dims);
    const Tensor centered = center ? x - x.mean(d, true) : x;
    rstd = rsqrt(square(centered).mean(d, true) + eps);
    xhat = centered * rstd;
  }
};

/// ∂x of a norm by the composed rule, in ops: what runs where there is no fused kernel and, when
/// backward records (create_graph), what gradients of gradients differentiate (Note
/// [Higher-order gradients] in autograd/engine.h).
Tensor composed_input_grad(const Tensor& g, const Tensor& weight, const Composed& c, const DimVector& d, bool center) {
  const Tensor gw = weight.defined() ? g * weight : g;
  Tensor inner = gw - c.xhat * (gw * c.xhat).mean(d, true);
  if (center) inner = inner - gw.mean(d, true);
  return c.rstd * inner;
}

template <bool kRms>
struct NormBackward;

/// layer_norm (kRms false) or rms_norm (true) over the trailing dims `shape` of x.
template <bool kRms>
struct Norm {
  static constexpr std::string_view name = kRms ? "rms_norm" : "layer_norm";
  static constexpr bool supports_cuda = true;
  static ops::OutputSpec meta(const Tensor& x, const Tensor& weight, const Tensor& bias, IntArrayRef shape, std::optional<double>) {
    TALLY_CHECK_TYPE_ERROR(x.is_floating_point() && !is_float8(x.dtype()), "\"", name, "\" not implemented for '", dtype_name(x.dtype()), "'");
    const auto dims = static_cast<int64_t>(shape.size());
    TALLY_CHECK(dims >= 1, name, ": expected normalized_shape to be at least 1-dimensional, i.e., containing at least one "
                "element, but got normalized_shape = []");
    if (!(dims <= x.dim() && trailing(x, dims) == shape)) {
      const std::string sizes = ::tally::detail::str_cat(shape);  // "[a, b]": PyTorch writes "[*, a, b]"
      throw ValueError(::tally::detail::str_cat(name, ": given normalized_shape=", sizes, ", expected input with shape [*, ",
                                                sizes.substr(1, sizes.size() - 2), "], but got input of size ", x.sizes()));
    }
    for (const Tensor* p : {&weight, &bias}) {
      if (!p->defined()) continue;
      const char* what = p == &weight ? "weight" : "bias";
      TALLY_CHECK(p->sizes() == shape, name, ": expected ", what, " of the normalized shape ", shape, ", got ", what, " of shape ", p->sizes());
      TALLY_CHECK_TYPE_ERROR(p->dtype() == x.dtype(), name, ": expected ", what, " of dtype ", dtype_name(x.dtype()), " like the input, got ",
                             dtype_name(p->dtype()));
    }
    return {DimVector(x.sizes()), x.dtype()};
  }
  static void compute(const Tensor& out, const Tensor& x, const Tensor& weight, const Tensor& bias, IntArrayRef shape,
                      std::optional<double> eps) {
    const auto dims = static_cast<int64_t>(shape.size());
    const NormRows r = rows_of(x, dims, eps);
    if (!out.is_cpu()) {
      const Composed c(x, dims, r.eps, !kRms);
      Tensor y = weight.defined() ? c.xhat * weight : c.xhat;
      Tensor(out).copy_(bias.defined() ? y + bias : y);
      return;
    }
    const Tensor xc = x.contiguous(), w = in_compute_type(weight), b = in_compute_type(bias);
    cpu_kernels().run<&Norm::kernel>(xc.data_ptr(), ptr_or_null(w), ptr_or_null(b), out.data_ptr(), r, x.dtype());
  }
  /// y for `r.rows` contiguous rows; w and b in the compute type, or null. Built once per target
  /// (Note [CPU kernel dispatch]).
  static void kernel(const void* x, const void* w, const void* b, void* y, NormRows r, Dtype dt) {
    kernels::dispatch_rows(dt, name, [&]<class T>() {
      using C = compute_t<T>;
      using L = kernels::RowLanes<C>;
      using namespace kernels;
      const C* pw = static_cast<const C*>(w);
      const C* pb = static_cast<const C*>(b);
      parallel_for(r.rows, row_grain(r.n), [&](int64_t begin, int64_t end) {
        RowScratch<C> in, res;
        for (int64_t row = begin; row < end; ++row) {
          const C* xr = widen_row(static_cast<const T*>(x) + row * r.n, in, r.n);
          T* yrow = static_cast<T*>(y) + row * r.n;
          C* yr = out_row(yrow, res, r.n);
          const RowStats<C> s = row_stats<!kRms>(xr, r);
          const auto vmean = L::splat(s.mean), vrstd = L::splat(s.rstd);
          for_blocks<C>(r.n, [&](int64_t i, int64_t m) {
            auto v = mul(sub(L::load(xr + i, m), vmean), vrstd);
            if (pw) v = mul(v, L::load(pw + i, m));
            if (pb) v = add(v, L::load(pb + i, m));
            L::store(yr + i, v, m);
          });
          narrow_row(yr, yrow, r.n);
        }
      });
    });
  }
  // Per element: layer_norm Σx, x − μ, (x − μ)², Σ, ×r (5); rms_norm x², Σ, ×r (3); then ×w, +b.
  static ops::Cost cost(const Tensor& out, const Tensor& x, const Tensor& weight, const Tensor& bias, IntArrayRef, std::optional<double>) {
    const int64_t per = (kRms ? 3 : 5) + (weight.defined() ? 1 : 0) + (bias.defined() ? 1 : 0);
    return {per * x.numel(), ops::bytes_held(x) + ops::bytes_held(weight) + ops::bytes_held(bias), out.nbytes()};
  }
  // Backward recomputes the statistics from the input: it keeps x (and w for ∂x), never y or b.
  static ops::SavedTensors saved(const SmallVector<bool, 4>& needs) {
    const bool dx = needs.size() > 0 && needs[0], dw = needs.size() > 1 && needs[1];
    return {{dx || dw, dx, false}, false};
  }
  static TensorList backward(const ops::BackwardContext& c, const Tensor& x, const Tensor& weight, const Tensor&, IntArrayRef shape,
                             std::optional<double> eps) {
    const auto dims = static_cast<int64_t>(shape.size());
    const Tensor g = c.grad.to(x.dtype());
    TensorList grads(3);
    const int64_t affine = (c.needs_grad(1) ? kGradWeight : 0) | (c.needs_grad(2) ? kGradBias : 0);
    const NormRows r = rows_of(x, dims, eps);
    if (GradMode::is_enabled() || !c.needs_grad(0)) {
      // The composed rule: for a recording backward (create_graph), which differentiates it, and
      // for a frozen input, where only the weight's and bias's are asked for. The statistics
      // only where a gradient reads them: x is kept only when ∂x or the weight's is wanted.
      std::optional<Composed> composed;
      if (c.needs_grad(0) || (affine & kGradWeight)) composed.emplace(x, dims, r.eps, !kRms);
      if (c.needs_grad(0)) grads[0] = composed_input_grad(g, weight, *composed, normalized_dims(x, dims), !kRms);
      if (affine & kGradWeight) grads[1] = sum_over_rows(g * composed->xhat, x, dims);
      if (affine & kGradBias) grads[2] = sum_over_rows(g, x, dims);
      return grads;
    }
    // The ∂x op's pass also sums g·x̂ and g over its pieces of rows into `partials` (a workspace,
    // zeros where there are no rows: one op makes one tensor, and one buffer holding ∂x beside
    // ∂w and ∂b would not be the size of anything else the allocator caches); sum adds the
    // pieces up in piece order.
    const Tensor partials =
        affine ? zeros({affine_pieces(r, x.device()), 2, r.n}, TensorOptions(partials_dtype(x.dtype())).device(x.device())) : Tensor();
    grads[0] = ops::apply<NormBackward<kRms>>(g, x, weight, dims, eps, affine, partials);
    const IntArrayRef shape_n = trailing(x, dims);
    for (const auto& [bit, row] : {std::pair{kGradWeight, 0}, std::pair{kGradBias, 1}})
      if (affine & bit) grads[static_cast<size_t>(1 + row)] = partials.select(1, row).sum({0}).to(x.dtype()).view(shape_n);
    return grads;
  }
};

/// ∂x of a norm for the incoming gradient g, and in the same pass over each row of g and x, the
/// sums over rows of g·x̂ (when `affine` has kGradWeight) and g (kGradBias) by pieces of rows
/// into the workspace `partials` [pieces, 2, n], added up in piece order after it: the result
/// does not depend on which thread ran which rows.
template <bool kRms>
struct NormBackward {
  static constexpr std::string_view name = kRms ? "rms_norm_backward" : "layer_norm_backward";
  static constexpr bool supports_cuda = true;
  static ops::OutputSpec meta(const Tensor& g, const Tensor& x, const Tensor&, int64_t, std::optional<double>, int64_t, const Tensor&) {
    TALLY_CHECK(g.sizes() == x.sizes() && g.dtype() == x.dtype(), name, ": gradient ", g.sizes(), " ", dtype_name(g.dtype()),
                " for an input ", x.sizes(), " ", dtype_name(x.dtype()));
    return {DimVector(x.sizes()), x.dtype()};
  }
  static void compute(const Tensor& out, const Tensor& g, const Tensor& x, const Tensor& weight, int64_t dims, std::optional<double> eps,
                      int64_t affine, const Tensor& partials) {
    const NormRows r = rows_of(x, dims, eps);
    if (!out.is_cpu()) {
      const Composed c(x, dims, r.eps, !kRms);
      out.copy_(composed_input_grad(g, weight, c, normalized_dims(x, dims), !kRms));
      // One piece: the sums over all rows.
      if (affine & kGradWeight) partials.select(0, 0).select(0, 0).copy_(sum_over_rows(g * c.xhat, x, dims).reshape({r.n}));
      if (affine & kGradBias) partials.select(0, 0).select(0, 1).copy_(sum_over_rows(g, x, dims).reshape({r.n}));
      return;
    }
    const Tensor gc = g.contiguous(), xc = x.contiguous(), w = in_compute_type(weight);
    cpu_kernels().run<&NormBackward::kernel>(gc.data_ptr(), xc.data_ptr(), ptr_or_null(w), out.data_ptr(),
                                             partials.defined() ? partials.data_ptr() : nullptr, partials.defined() ? partials.size(0) : 0,
                                             affine, r, x.dtype());
  }
  /// ∂x into dx for `r.rows` contiguous rows, and the rows' g·x̂ and g (as `affine` asks) into
  /// rows 2p and 2p + 1 of `partials` for each of `pieces` pieces of rows. Built once per target
  /// (Note [CPU kernel dispatch]).
  static void kernel(const void* g, const void* x, const void* w, void* dx, void* partials, int64_t pieces, int64_t affine, NormRows r,
                     Dtype dt) {
    kernels::dispatch_rows(dt, name, [&]<class T>() {
      using C = compute_t<T>;
      using L = kernels::RowLanes<C>;
      using namespace kernels;
      const C* pw = static_cast<const C*>(w);
      // ∂x alone splits rows as the forward does; with sums, into `pieces` pieces of rows.
      const int64_t units = pieces > 0 ? pieces : r.rows, grain = pieces > 0 ? 1 : row_grain(r.n);
      parallel_for(units, grain, [&](int64_t begin, int64_t end) {
        RowScratch<C> xin, gin, res;
        for (int64_t unit = begin; unit < end; ++unit) {
          C* acc_w = affine & kGradWeight ? static_cast<C*>(partials) + 2 * unit * r.n : nullptr;
          C* acc_b = affine & kGradBias ? static_cast<C*>(partials) + (2 * unit + 1) * r.n : nullptr;
          for (C* acc : {acc_w, acc_b})
            if (acc) std::fill(acc, acc + r.n, C(0));
          const int64_t first = pieces > 0 ? r.rows * unit / pieces : unit, last = pieces > 0 ? r.rows * (unit + 1) / pieces : unit + 1;
          for (int64_t row = first; row < last; ++row) {
            const C* xr = widen_row(static_cast<const T*>(x) + row * r.n, xin, r.n);
            const C* gr = widen_row(static_cast<const T*>(g) + row * r.n, gin, r.n);
            const RowStats<C> s = row_stats<!kRms>(xr, r);
            const auto vmean = L::splat(s.mean), vrstd = L::splat(s.rstd);
            auto xhat = [&](int64_t i, int64_t m) { return mul(sub(L::load(xr + i, m), vmean), vrstd); };
            auto gw = [&](int64_t i, int64_t m) { return pw ? mul(L::load(gr + i, m), L::load(pw + i, m)) : L::load(gr + i, m); };
            T* dxrow = static_cast<T*>(dx) + row * r.n;
            C* dr = out_row(dxrow, res, r.n);
            const C inv_n = C(1) / static_cast<C>(r.n);
            const C a = kRms ? C(0) : row_sum<C>(r.n, gw) * inv_n;
            const C b = row_sum<C>(r.n, [&](int64_t i, int64_t m) { return mul(gw(i, m), xhat(i, m)); }) * inv_n;
            const auto va = L::splat(a), vb = L::splat(b);
            for_blocks<C>(r.n, [&](int64_t i, int64_t m) { L::store(dr + i, mul(vrstd, sub(sub(gw(i, m), va), mul(xhat(i, m), vb))), m); });
            narrow_row(dr, dxrow, r.n);
            if (acc_w) for_blocks<C>(r.n, [&](int64_t i, int64_t m) { L::store(acc_w + i, add(L::load(acc_w + i, m), mul(L::load(gr + i, m), xhat(i, m))), m); });
            if (acc_b) for_blocks<C>(r.n, [&](int64_t i, int64_t m) { L::store(acc_b + i, add(L::load(acc_b + i, m), L::load(gr + i, m)), m); });
          }
        }
      });
    });
  }
  // ∂x: the statistics again (layer_norm 4, rms_norm 2), x̂ (2 or 1), g·w, Σgw (layer_norm),
  // gw·x̂ and its Σ (2), then r·(gw − a − x̂·b) (4, rms_norm 3). ∂w's sums: x̂ again, g·x̂ and
  // the running sum (4, rms_norm 3). ∂b's: Σ g (1).
  static ops::Cost cost(const Tensor& out, const Tensor& g, const Tensor& x, const Tensor& weight, int64_t, std::optional<double>,
                        int64_t affine, const Tensor& partials) {
    const int64_t per = (kRms ? 8 : 13) + (weight.defined() ? 1 : 0) + (affine & kGradWeight ? (kRms ? 3 : 4) : 0) + (affine & kGradBias ? 1 : 0);
    return {per * x.numel(), ops::bytes_held(g) + ops::bytes_held(x) + ops::bytes_held(weight),
            out.nbytes() + (partials.defined() ? partials.nbytes() : 0)};
  }
};

/// The dtype a norm runs in: its defined tensors' promoted dtype, as the elementwise ops would give.
Dtype norm_dtype(const Tensor& x, const Tensor& weight, const Tensor& bias) {
  Dtype d = x.dtype();
  for (const Tensor* p : {&weight, &bias})
    if (p->defined()) d = promote_types(d, p->dtype());
  return d;
}
Tensor as(const Tensor& t, Dtype d) { return t.defined() && t.dtype() != d ? t.to(d) : t; }

}  // namespace

#if TALLY_PRIMARY_PASS
Tensor layer_norm(const Tensor& input, IntArrayRef normalized_shape, const Tensor& weight, const Tensor& bias, double eps) {
  const Dtype d = norm_dtype(input, weight, bias);
  return ops::apply<Norm<false>>(as(input, d), as(weight, d), as(bias, d), normalized_shape, std::optional<double>(eps));
}

Tensor rms_norm(const Tensor& input, IntArrayRef normalized_shape, const Tensor& weight, std::optional<double> eps) {
  const Dtype d = norm_dtype(input, weight, Tensor());
  return ops::apply<Norm<true>>(as(input, d), as(weight, d), Tensor(), normalized_shape, eps);
}
#endif  // TALLY_PRIMARY_PASS

}  // namespace tally

TALLY_CPU_KERNELS(normalization, &Norm<false>::kernel, &Norm<true>::kernel, &NormBackward<false>::kernel, &NormBackward<true>::kernel)
