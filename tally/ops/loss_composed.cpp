// Losses composed of other ops: mse_loss, nll_loss (a gather of each row's target
// log-probability) and binary cross-entropy from probabilities or logits. Their costs, memory
// and gradients are those of the ops they are made of; the checks and messages are PyTorch's.

#include <limits>

#include "tally/error/warning.h"
#include "tally/ops/apply.h"
#include "tally/ops/creation.h"
#include "tally/ops/elementwise.h"
#include "tally/ops/gather.h"
#include "tally/ops/loss.h"
#include "tally/ops/reduce.h"

namespace tally {

namespace {

Tensor reduce(const Tensor& losses, Reduction reduction) {
  switch (reduction) {
    case Reduction::None: return losses;
    case Reduction::Sum: return losses.sum();
    case Reduction::Mean: break;
  }
  return losses.mean();
}

/// PyTorch's words for a target of another shape than the input's.
std::string target_size_differs(const Tensor& input, const Tensor& target) {
  return ::tally::detail::str_cat("Using a target size (", target.sizes(), ") that is different to the input size (", input.sizes(), ")");
}

void check_same_shape(const char* op, const Tensor& input, const Tensor& target) {
  TALLY_CHECK(input.sizes() == target.sizes(), target_size_differs(input, target), " is deprecated. Please ensure they have the same size. (",
              op, ")");
}

}  // namespace

Tensor mse_loss(const Tensor& input_, const Tensor& target_, Reduction reduction) {
  Tensor input = input_, target = target_;
  if (input.sizes() != target.sizes())
    TALLY_WARN_ONCE(target_size_differs(input, target),
                    ". This will likely lead to incorrect results due to broadcasting. Please ensure they have the same size. (mse_loss)");
  const ops::AutocastRegion autocast("mse_loss", {&input, &target});
  return reduce(square(input - target), reduction);
}

Tensor nll_loss(const Tensor& input_, const Tensor& target, int64_t ignore_index, Reduction reduction) {
  Tensor input = input_;
  const ops::AutocastRegion autocast("nll_loss", {&input});
  TALLY_CHECK_TYPE_ERROR(input.is_floating_point() && !is_float8(input.dtype()), "\"nll_loss\" not implemented for '",
                         dtype_name(input.dtype()), "'");
  TALLY_CHECK_TYPE_ERROR(target.dtype() == kInt64, "nll_loss: expected target of scalar type Long (int64) but found ",
                         dtype_name(target.dtype()));
  TALLY_CHECK(input.dim() >= 1, "nll_loss: input must have a class dim, got a 0-d tensor");
  // Classes in dim 1 ([N, C, d1, ...]) or alone ([C]); the target is the input's shape without them.
  const int64_t class_dim = input.dim() == 1 ? 0 : 1, classes = input.size(class_dim);
  DimVector expected(input.sizes());
  expected.erase(expected.begin() + class_dim);
  if (input.dim() >= 2) {
    TALLY_CHECK(target.dim() >= 1 && target.size(0) == input.size(0), "Expected input batch_size (", input.size(0),
                ") to match target batch_size (", target.dim() >= 1 ? target.size(0) : 0, ").");
  }
  TALLY_CHECK(target.sizes() == IntArrayRef(expected), "nll_loss: target of shape ", target.sizes(), " does not fit input of shape ",
              input.sizes(), " (expected ", IntArrayRef(expected), ", the input's shape without its class dim)");
  // Every target is a class or the ignored index: checked here, with its value, on the host.
  const Tensor host = target.to(kCPU).contiguous();
  const int64_t* t = host.data_ptr<int64_t>();
  for (int64_t i = 0; i < host.numel(); ++i)
    TALLY_CHECK_INDEX(t[i] == ignore_index || (t[i] >= 0 && t[i] < classes), "Target ", t[i], " is out of bounds (", classes,
                      " classes).");
  const Tensor kept = target != ignore_index;
  const Tensor picked_at = where(kept, target, zeros({}, target.options())).unsqueeze(class_dim);
  const Tensor picked = gather(input, class_dim, picked_at).squeeze(class_dim);
  const Tensor losses = where(kept, -picked, zeros({}, picked.options()));
  if (reduction != Reduction::Mean) return reduce(losses, reduction);
  // The mean over the targets that count: 0/0 (NaN) when none does, as torch 1.13's.
  return losses.sum() / kept.sum().to(losses.dtype());
}

Tensor binary_cross_entropy(const Tensor& input_, const Tensor& target_, Reduction reduction) {
  Tensor input = input_, target = target_;
  const ops::AutocastRegion autocast("binary_cross_entropy", {&input, &target});
  check_same_shape("binary_cross_entropy", input, target);
  TALLY_CHECK_TYPE_ERROR(input.is_floating_point() && target.dtype() == input.dtype(),
                         "binary_cross_entropy: expected input and target of one floating dtype, got ", dtype_name(input.dtype()), " and ",
                         dtype_name(target.dtype()));
  if (input.numel() > 0) {
    const double lo = input.detach().amin().to(kFloat64).item<double>(), hi = input.detach().amax().to(kFloat64).item<double>();
    TALLY_CHECK(lo >= 0.0 && hi <= 1.0, "all elements of input should be between 0 and 1 (found values from ", lo, " to ", hi, ")");
  }
  // log 0 is −inf: PyTorch clamps each log at −100, so a confidently wrong 0 or 1 costs 100. The
  // input's gradient is PyTorch's rule, (p − t) / max(p·(1 − p), 1e-12), which stays finite at 0
  // and 1 (float32's sigmoid gives 1 from x ≈ 17 on), where the clamped logs' own rule gives
  // 0·∞ = NaN: the logs are taken as constants, and p·w less its detached value, zero, carries it.
  const Tensor p = input.detach();
  const Tensor log_p = clamp(log(p), -100.0), log_q = clamp(log(1 - p), -100.0);
  const Tensor w = ((p - target.detach()) / clamp(p * (1 - p), 1e-12)).detach();
  const Tensor carried = input * w;
  return reduce(-(target * log_p + (1 - target) * log_q) + (carried - carried.detach()), reduction);
}

Tensor binary_cross_entropy_with_logits(const Tensor& input_, const Tensor& target_, Reduction reduction) {
  Tensor input = input_, target = target_;
  const ops::AutocastRegion autocast("binary_cross_entropy_with_logits", {&input, &target});
  check_same_shape("binary_cross_entropy_with_logits", input, target);
  TALLY_CHECK_TYPE_ERROR(input.is_floating_point() && target.is_floating_point(),
                         "binary_cross_entropy_with_logits: expected floating input and target, got ", dtype_name(input.dtype()), " and ",
                         dtype_name(target.dtype()));
  // e⁻ᵐ + e^(−x−m) with m = max(−x, 0) never overflows, and its gradient at x = 0 is sigmoid's
  // (a max(x, 0) − x·t + log1p(e^(−|x|)) form gets −t there: relu and abs have 0 at 0).
  const Tensor m = clamp(-input, 0.0);
  return reduce((1 - target) * input + m + log(exp(-m) + exp(-input - m)), reduction);
}

}  // namespace tally
