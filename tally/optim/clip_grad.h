#pragma once
// Gradient clipping by total norm (libtorch's torch::nn::utils::clip_grad_norm_, PyTorch 1.13's
// rule) and by value (clip_grad_value_). It lives with the optimizers because it runs between
// backward() and step().

#include <vector>

#include "tally/core/tensor.h"

namespace tally::nn::utils {

/// Scale the gradients of `parameters` so that their total `norm_type`-norm (the norm of the
/// per-gradient norms; `norm_type` may be infinity) is at most `max_norm`: each gradient is
/// multiplied by max_norm / (total + 1e-6) when that is below 1. Parameters without a gradient
/// are skipped. Returns the total norm before clipping; a non-finite one is an error when
/// `error_if_nonfinite`. The work is ledger rows of the optimizer phase. On meta tensors (a
/// predicted step) it returns NaN and counts the scaling whenever max_norm is finite.
double clip_grad_norm_(const std::vector<Tensor>& parameters, double max_norm, double norm_type = 2.0,
                       bool error_if_nonfinite = false);
/// The same for one parameter.
double clip_grad_norm_(const Tensor& parameter, double max_norm, double norm_type = 2.0, bool error_if_nonfinite = false);

/// Clamp every gradient of `parameters` to [−clip_value, clip_value] in place
/// (torch.nn.utils.clip_grad_value_); parameters without a gradient are skipped. Ledger rows of
/// the optimizer phase.
void clip_grad_value_(const std::vector<Tensor>& parameters, double clip_value);

}  // namespace tally::nn::utils
