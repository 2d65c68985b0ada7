#include "tally/optim/clip_grad.h"

#include <cmath>
#include <limits>

#include "tally/accounting/flop_counter.h"
#include "tally/core/autograd_meta.h"
#include "tally/ops/creation.h"
#include "tally/ops/elementwise.h"
#include "tally/ops/foreach.h"
#include "tally/ops/join.h"
#include "tally/ops/reduce.h"

namespace tally::nn::utils {

namespace {

/// torch.norm(x, p) of a whole tensor in its dtype: max |x| for p = ∞, min |x| for p = −∞, the
/// count of non-zeros for p = 0, else (Σ|x|^p)^(1/p) (negative p too) with the sum accumulated in
/// float64, as PyTorch's CPU reductions accumulate float32.
Tensor vector_norm(const Tensor& x, double p) {
  if (std::isinf(p)) return p > 0 ? amax(abs(x)) : amin(abs(x));
  if (p == 0.0) return sum(x != 0, x.dtype());
  const Tensor terms = p == 2.0 ? x * x : p == 1.0 ? abs(x) : pow(abs(x), p);
  const Tensor total = sum(terms, kFloat64);
  return (p == 2.0 ? sqrt(total) : p == 1.0 ? total : pow(total, 1.0 / p)).to(x.dtype());
}

}  // namespace

double clip_grad_norm_(const std::vector<Tensor>& parameters, double max_norm, double norm_type, bool error_if_nonfinite) {
  TALLY_CHECK(!std::isnan(norm_type), "clip_grad_norm_: norm_type is NaN");
  TensorList grads;
  for (const Tensor& p : parameters)
    if (p.grad().defined()) grads.push_back(p.grad());
  if (grads.empty()) return 0.0;
  NoGradGuard no_grad;
  accounting::OptimizerPhaseGuard phase;
  TensorList norms;
  for (const Tensor& g : grads) norms.push_back(vector_norm(g, norm_type));
  const Tensor total = norms.size() == 1 ? norms.front() : vector_norm(stack(norms), norm_type);
  // As PyTorch: max_norm / (total + 1e-6) in the gradients' dtype; PyTorch multiplies by the
  // coefficient clamped to 1, which leaves the gradients as they are when it is 1 or more, and
  // makes them all NaN when the norm is (a NaN coefficient stays NaN through the clamp).
  const Tensor coef = scalar_tensor(max_norm, TensorOptions(total.dtype()).device(total.device())).div(total.add(1e-6));
  if (total.device().is_meta()) {
    // A step predicted on meta tensors (train::predict_step) has no values to compare: it counts
    // the scaling whenever a finite max_norm asks for it, as a step whose norm is above it runs.
    if (std::isfinite(max_norm)) _foreach_mul_(grads, 1.0);
    return std::numeric_limits<double>::quiet_NaN();
  }
  const double total_norm = total.item<double>();
  TALLY_CHECK(!error_if_nonfinite || std::isfinite(total_norm), "The total norm of order ", norm_type,
              " for gradients from `parameters` is non-finite, so it cannot be clipped. To disable this error and scale "
              "the gradients by the non-finite norm anyway, set `error_if_nonfinite=False`");
  if (const double c = coef.item<double>(); !(c >= 1.0)) _foreach_mul_(grads, c);
  return total_norm;
}

double clip_grad_norm_(const Tensor& parameter, double max_norm, double norm_type, bool error_if_nonfinite) {
  return clip_grad_norm_(std::vector<Tensor>{parameter}, max_norm, norm_type, error_if_nonfinite);
}

void clip_grad_value_(const std::vector<Tensor>& parameters, double clip_value) {
  NoGradGuard no_grad;
  accounting::OptimizerPhaseGuard phase;
  for (const Tensor& p : parameters) {
    Tensor g = p.grad();
    if (g.defined()) g.clamp_(-clip_value, clip_value);
  }
}

}  // namespace tally::nn::utils
