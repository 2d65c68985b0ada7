// cross_entropy as one op over rows of logits, and its backward as another: each reads a row of
// C logits once (max, then exp-sum, in cache) and never materialises log_softmax, so a language
// model's [B·T, V] log-probabilities cost no memory (on the CPU; GpuRows says how the GPU does it).
//
// Per row with target t, log-sum-exp L = m + log Σ exp(x_c − m) and smoothing ε:
//   loss = (1 − ε)·(L − x_t) + ε·(L − mean_c x_c)          (= −Σ_c q_c log p_c, q = (1 − ε)·onehot + ε/C)
//   ∂loss/∂x_c = softmax_c − (1 − ε)·[c = t] − ε/C
// Rows whose target is ignore_index give 0 and are not counted by the mean (PyTorch's rule).

#include "tally/ops/loss.h"

#include <cmath>
#include <limits>
#include <vector>

#include "tally/kernels/cpu/dispatch.h"
#include "tally/kernels/cpu/parallel.h"
#include "tally/kernels/cpu/rows.h"
#include "tally/kernels/cpu/vec_math.h"
#include "tally/ops/apply.h"
#include "tally/ops/creation.h"
#include "tally/ops/elementwise.h"
#include "tally/ops/join.h"
#include "tally/ops/reduce.h"

namespace tally {

namespace {

/// log Σ exp(x) of a row, and Σ x (for label smoothing).
struct RowStats {
  double lse = 0;
  double sum = 0;
};

template <class T>
RowStats row_stats(const T* x, int64_t n) {
  using C = compute_t<T>;
  if constexpr (std::is_same_v<T, float>) {
    using namespace kernels;
    int64_t i = 0;
    Vec16f vmax = splat(-std::numeric_limits<float>::infinity()), vsum = splat(0.0f);
    for (; i + 16 <= n; i += 16) {
      const Vec16f v = load(x + i);
      vmax = kernels::max(vmax, v);
      vsum = add(vsum, v);
    }
    float m = reduce_max(vmax);
    double s = reduce_add(vsum);
    for (; i < n; ++i) {
      m = std::max(m, x[i]);
      s += x[i];
    }
    // A row of all −inf: let the arithmetic give inf/NaN as PyTorch does. A +inf logit stays the
    // maximum, so inf − inf makes the row NaN, as PyTorch's log_softmax and cross_entropy are.
    if (m == -std::numeric_limits<float>::infinity()) m = 0;
    const Vec16f vm = splat(m);
    Vec16f ve = splat(0.0f);
    for (i = 0; i + 16 <= n; i += 16) ve = add(ve, kernels::exp(sub(load(x + i), vm)));
    double e = reduce_add(ve);
    for (; i < n; ++i) e += std::exp(x[i] - m);
    return {m + std::log(e), s};
  } else {
    double m = -std::numeric_limits<double>::infinity(), s = 0;
    for (int64_t i = 0; i < n; ++i) {
      const double v = static_cast<double>(static_cast<C>(x[i]));
      m = std::max(m, v);
      s += v;
    }
    if (m == -std::numeric_limits<double>::infinity()) m = 0;  // as above
    double e = 0;
    for (int64_t i = 0; i < n; ++i) e += std::exp(static_cast<double>(static_cast<C>(x[i])) - m);
    return {m + std::log(e), s};
  }
}

/// Logits as rows: [N, C] (a [C] input is one row).
struct Rows {
  int64_t n, c;
};

/// What a row kernel needs beyond the logits: each row's target, the gradient scale of the
/// loss (per row for reduction none, else one), and the options.
struct RowTargets {
  const int64_t* target;
  const double* per_row;
  double scale;
  int64_t ignore_index;
  double smoothing;
};

/// dst = scale·(exp(x − lse) − off) over a row: softmax minus the smoothing share, scaled.
template <class T>
void softmax_minus(const T* x, T* dst, int64_t n, double lse, double scale, double off) {
  using C = compute_t<T>;
  const C s = static_cast<C>(scale), shift = static_cast<C>(lse), o = static_cast<C>(off);
  int64_t i = 0;
  if constexpr (std::is_same_v<T, float>) {
    using namespace kernels;
    const Vec16f vs = splat(s), vshift = splat(shift), vo = splat(o);
    for (; i + 16 <= n; i += 16) store(dst + i, mul(vs, sub(kernels::exp(sub(load(x + i), vshift)), vo)));
  }
  for (; i < n; ++i) dst[i] = cast_to<T>(s * (std::exp(static_cast<C>(x[i]) - shift) - o));
}
Rows rows_of(const Tensor& input) { return input.dim() == 1 ? Rows{1, input.size(0)} : Rows{input.size(0), input.size(1)}; }

/// Rows that count (target ≠ ignore_index), after checking every target is a class.
int64_t counted_rows(const int64_t* t, Rows r, int64_t ignore_index) {
  int64_t count = 0;
  for (int64_t i = 0; i < r.n; ++i) {
    if (t[i] == ignore_index) continue;
    TALLY_CHECK_INDEX(t[i] >= 0 && t[i] < r.c, "Target ", t[i], " is out of bounds (row ", i, ", ", r.c, " classes).");
    ++count;
  }
  return count;
}

void check_inputs(const char* op, const Tensor& input, const Tensor& target, double label_smoothing) {
  TALLY_CHECK_TYPE_ERROR(input.is_floating_point() && !is_float8(input.dtype()), "\"", op, "\" not implemented for '",
                         dtype_name(input.dtype()), "'");
  TALLY_CHECK(input.dim() == 1 || input.dim() == 2, op, ": input must be [C] or [N, C], got ", input.sizes());
  TALLY_CHECK_TYPE_ERROR(target.dtype() == kInt64, op, ": expected target of scalar type Long (int64) but found ",
                         dtype_name(target.dtype()), " (class probabilities as targets are not supported)");
  TALLY_CHECK(target.dim() == input.dim() - 1, op, ": target of shape ", target.sizes(), " does not fit input of shape ",
              input.sizes(), " (expected the input's shape without its class dim)");
  TALLY_CHECK(input.dim() == 1 || target.size(0) == input.size(0), "Expected input batch_size (", input.size(0),
              ") to match target batch_size (", target.size(0), ").");
  TALLY_CHECK(label_smoothing >= 0.0 && label_smoothing <= 1.0, "label_smoothing must be between 0.0 and 1.0. Got: ",
              label_smoothing);
  TALLY_CHECK(input.device() == target.device(), "Expected all tensors to be on the same device, but found at least two devices, ",
              input.device(), " and ", target.device(), "!");
}

/// On the GPU both ops are the same maths composed of the GPU's row ops (log_softmax, softmax,
/// index_select, index_add, masked_fill) in float32 (float64 for float64 logits), like the CPU
/// rows' float and double sums. The targets are read on the host, to check them as the CPU does
/// and to find each row's logit: these are the rows.
struct GpuRows {
  Tensor x;        ///< the logits [N, C] in the compute dtype
  Tensor picked;   ///< [N] flat indices i·C + t_i into x (column 0 for an ignored row)
  Tensor ignored;  ///< [N] bool: target = ignore_index
  int64_t count;   ///< rows not ignored
};
GpuRows gpu_rows(const Tensor& input, const Tensor& target, Rows r, int64_t ignore_index) {
  const Tensor t = target.to(kCPU).contiguous();
  const int64_t* pt = t.data_ptr<int64_t>();
  const int64_t count = counted_rows(pt, r, ignore_index);
  Tensor picked = empty({r.n}, kInt64), ignored = empty({r.n}, kBool);
  int64_t* pp = picked.data_ptr<int64_t>();
  bool* pi = ignored.data_ptr<bool>();
  for (int64_t i = 0; i < r.n; ++i) {
    pi[i] = pt[i] == ignore_index;
    pp[i] = i * r.c + (pi[i] ? 0 : pt[i]);
  }
  const Dtype compute = input.dtype() == kFloat64 ? kFloat64 : kFloat32;
  return {input.reshape({r.n, r.c}).to(compute), picked.to(input.device()), ignored.to(input.device()), count};
}

/// The loss's backward: ∂loss/∂input for the incoming gradient of the (reduced) loss.
struct CrossEntropyBackward {
  static constexpr std::string_view name = "cross_entropy_backward";
  static constexpr bool supports_cuda = true;
  /// The same by the composed rule, in ops (softmax, minus the picked one-hot, scaled): what runs
  /// on the GPU and, when backward records (create_graph), what gradients of gradients
  /// differentiate (Note [Higher-order gradients] in autograd/engine.h). In the input's dtype.
  static Tensor composed(const Tensor& grad, const Tensor& input, const Tensor& target, int64_t ignore_index, double smoothing,
                         Reduction reduction) {
    const Rows r = rows_of(input);
    const GpuRows g = gpu_rows(input, target, r, ignore_index);
    Tensor d = g.x.softmax(-1);
    if (smoothing != 0) d = d - smoothing / static_cast<double>(r.c);
    const Tensor minus_one = full({r.n}, -(1.0 - smoothing), d.options());
    d = index_add(d.reshape({-1}), 0, g.picked, minus_one).view({r.n, r.c});
    const Tensor gs = grad.to(d.dtype());
    const Tensor scale = reduction == Reduction::None ? gs.reshape({r.n, 1})
                         : reduction == Reduction::Sum ? gs
                                                       : gs / static_cast<double>(g.count);
    return (d * scale).masked_fill(g.ignored.reshape({r.n, 1}), 0.0).reshape(input.sizes()).to(input.dtype());
  }
  static ops::OutputSpec meta(const Tensor& grad, const Tensor& input, const Tensor&, int64_t, double, Reduction) {
    return {DimVector(input.sizes()), input.dtype()};
  }
  static void compute(const Tensor& out, const Tensor& grad, const Tensor& input, const Tensor& target, int64_t ignore_index,
                      double smoothing, Reduction reduction) {
    const Rows r = rows_of(input);
    if (out.is_cuda()) {
      out.copy_(composed(grad, input, target, ignore_index, smoothing, reduction));
      return;
    }
    const Tensor x = input.contiguous(), t = target.contiguous();
    const int64_t* pt = t.data_ptr<int64_t>();
    const int64_t count = counted_rows(pt, r, ignore_index);
    // Each row's scale: the incoming gradient of its loss (none), of the sum, or of the mean. Read
    // into doubles, not a float64 tensor: a temporary tensor here would be bytes on the tracker's
    // books that the same step on the meta device, which runs no compute, cannot predict.
    std::vector<double> per_row;
    double total = 0;
    if (reduction == Reduction::None) {
      const Tensor g = grad.contiguous();
      per_row.resize(static_cast<size_t>(r.n));
      dispatch(g.dtype(), name, [&]<class T>() {
        const T* pg = g.data_ptr<T>();
        for (int64_t i = 0; i < r.n; ++i) per_row[static_cast<size_t>(i)] = static_cast<double>(static_cast<compute_t<T>>(pg[i]));
      });
    } else {
      const double g = grad.item<double>();
      total = reduction == Reduction::Sum ? g : g / static_cast<double>(count);
    }
    const RowTargets rt{pt, reduction == Reduction::None ? per_row.data() : nullptr, total, ignore_index, smoothing};
    cpu_kernels().run<&CrossEntropyBackward::kernel>(x.data_ptr(), out.data_ptr(), r, rt, input.dtype());
  }
  /// dx for `r.n` contiguous rows; built once per target (Note [CPU kernel dispatch]).
  static void kernel(const void* x, void* out, Rows r, RowTargets rt, Dtype dt) {
    const double per_class = rt.smoothing / static_cast<double>(r.c);
    kernels::dispatch_rows(dt, name, [&]<class T>() {
      const T* px = static_cast<const T*>(x);
      T* po = static_cast<T*>(out);
      kernels::parallel_for(r.n, kernels::row_grain(r.c), [&](int64_t b, int64_t e) {
        for (int64_t i = b; i < e; ++i) {
          const int64_t ti = rt.target[i];
          T* dst = po + i * r.c;
          if (ti == rt.ignore_index) {
            for (int64_t c = 0; c < r.c; ++c) dst[c] = cast_to<T>(0.0f);
            continue;
          }
          const double scale = rt.per_row ? rt.per_row[i] : rt.scale;
          const T* row = px + i * r.c;
          softmax_minus(row, dst, r.c, row_stats(row, r.c).lse, scale, per_class);
          dst[ti] = cast_to<T>(static_cast<compute_t<T>>(dst[ti]) - static_cast<compute_t<T>>(scale * (1.0 - rt.smoothing)));
        }
      });
    });
  }
  // Recompute the row's log-sum-exp (max, exp, add: 3), then exp(x − L) − ε/C scaled (sub, exp, sub, mul: 4).
  static ops::Cost cost(const Tensor& out, const Tensor& grad, const Tensor& input, const Tensor& target, int64_t, double, Reduction) {
    return {7 * input.numel(), ops::bytes_held(input) + ops::bytes_held(target) + ops::bytes_held(grad), out.nbytes()};
  }
};

struct CrossEntropy {
  static constexpr std::string_view name = "cross_entropy";
  static constexpr bool supports_cuda = true;
  static ops::OutputSpec meta(const Tensor& input, const Tensor& target, int64_t, double smoothing, Reduction reduction) {
    check_inputs("cross_entropy", input, target, smoothing);
    DimVector sizes;
    if (reduction == Reduction::None && input.dim() == 2) sizes.push_back(input.size(0));
    return {sizes, input.dtype()};
  }
  static void compute(const Tensor& out, const Tensor& input, const Tensor& target, int64_t ignore_index, double smoothing,
                      Reduction reduction) {
    const Rows r = rows_of(input);
    if (out.is_cuda()) {
      const GpuRows g = gpu_rows(input, target, r, ignore_index);
      const Tensor logp = g.x.log_softmax(-1);
      Tensor loss = -index_select(logp.reshape({-1}), 0, g.picked);
      if (smoothing != 0) loss = loss * (1.0 - smoothing) - logp.mean({-1}) * smoothing;
      loss = loss.masked_fill(g.ignored, 0.0);
      const Tensor result = reduction == Reduction::None ? loss
                            : reduction == Reduction::Sum ? loss.sum()
                                                          : loss.sum() / static_cast<double>(g.count);  // 0/0 = NaN, as PyTorch
      Tensor(out).copy_(result.reshape(out.sizes()));
      return;
    }
    const Tensor x = input.contiguous(), t = target.contiguous();
    const int64_t* pt = t.data_ptr<int64_t>();
    const int64_t count = counted_rows(pt, r, ignore_index);
    std::vector<double> losses(static_cast<size_t>(r.n));
    cpu_kernels().run<&CrossEntropy::kernel>(x.data_ptr(), losses.data(), r, RowTargets{pt, nullptr, 0, ignore_index, smoothing},
                                             input.dtype());
    dispatch(input.dtype(), name, [&]<class T>() {
      T* po = out.data_ptr<T>();
      if (reduction == Reduction::None) {
        for (int64_t i = 0; i < r.n; ++i) po[i] = cast_to<T>(losses[static_cast<size_t>(i)]);
        return;
      }
      double total = 0;
      for (double l : losses) total += l;
      po[0] = cast_to<T>(reduction == Reduction::Sum ? total : total / static_cast<double>(count));  // 0/0 = NaN, as PyTorch
    });
  }
  /// Each counted row's loss into `losses` (ignored rows are left alone); built once per target.
  static void kernel(const void* x, double* losses, Rows r, RowTargets rt, Dtype dt) {
    kernels::dispatch_rows(dt, name, [&]<class T>() {
      const T* px = static_cast<const T*>(x);
      kernels::parallel_for(r.n, kernels::row_grain(r.c), [&](int64_t b, int64_t e) {
        for (int64_t i = b; i < e; ++i) {
          const int64_t ti = rt.target[i];
          if (ti == rt.ignore_index) continue;
          const T* row = px + i * r.c;
          const RowStats st = row_stats(row, r.c);
          const double nll = st.lse - static_cast<double>(static_cast<compute_t<T>>(row[ti]));
          // Without smoothing the loss is the NLL alone: the smoothing term is infinite when a
          // logit is -inf (a masked-out class), and 0·inf would make the row's loss NaN.
          losses[i] = rt.smoothing == 0 ? nll : (1.0 - rt.smoothing) * nll + rt.smoothing * (st.lse - st.sum / static_cast<double>(r.c));
        }
      });
    });
  }
  // Per logit: max, exp-sum (sub, exp, add) and the sum for smoothing: 5.
  static ops::Cost cost(const Tensor& out, const Tensor& input, const Tensor& target, int64_t, double, Reduction) {
    return {5 * input.numel(), ops::bytes_held(input) + ops::bytes_held(target), out.nbytes()};
  }
  // The rows are recomputed from the logits and targets; the loss itself is not read.
  static ops::SavedTensors saved(const SmallVector<bool, 4>&) { return {{true, true}, false}; }
  static TensorList backward(const ops::BackwardContext& c, const Tensor& input, const Tensor& target, int64_t ignore_index,
                             double smoothing, Reduction reduction) {
    if (!c.needs_grad(0)) return {Tensor(), Tensor()};
    if (GradMode::is_enabled())  // a recording backward
      return {CrossEntropyBackward::composed(c.grad, input, target, ignore_index, smoothing, reduction), Tensor()};
    return {ops::apply<CrossEntropyBackward>(c.grad, input, target, ignore_index, smoothing, reduction), Tensor()};
  }
};

}  // namespace

#if TALLY_PRIMARY_PASS
Tensor cross_entropy(const Tensor& input, const Tensor& target, const CrossEntropyOptions& options) {
  if (input.dim() > 2) {
    // Classes in dim 1: move them last and flatten, as PyTorch's K-dimensional loss does.
    TALLY_CHECK(target.dim() == input.dim() - 1, "cross_entropy: target of shape ", target.sizes(), " does not fit input of shape ",
                input.sizes(), " (expected the input's shape without dim 1)");
    DimVector expected = {input.size(0)};
    for (int64_t d = 2; d < input.dim(); ++d) expected.push_back(input.size(d));
    TALLY_CHECK(target.sizes() == IntArrayRef(expected), "Expected target size ", IntArrayRef(expected), ", got ", target.sizes());
    const int64_t classes = input.size(1);
    DimVector order = {0};
    for (int64_t d = 2; d < input.dim(); ++d) order.push_back(d);
    order.push_back(1);
    Tensor rows = input.permute(order).reshape({-1, classes});
    Tensor loss = ops::apply<CrossEntropy>(rows, target.reshape({-1}), options.ignore_index, options.label_smoothing, options.reduction);
    return options.reduction == Reduction::None ? loss.view(target.sizes()) : loss;
  }
  return ops::apply<CrossEntropy>(input, target, options.ignore_index, options.label_smoothing, options.reduction);
}

#endif  // TALLY_PRIMARY_PASS

}  // namespace tally

TALLY_CPU_KERNELS(cross_entropy, &CrossEntropy::kernel, &CrossEntropyBackward::kernel)
