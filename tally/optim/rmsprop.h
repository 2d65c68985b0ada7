#pragma once
// RMSprop: PyTorch 1.13's torch.optim.RMSprop (plain, centered, with momentum), run as one fused
// pass per parameter (Note [Fused update]).

#include "tally/optim/optimizer.h"

namespace tally::optim {

/// RMSprop's hyper-parameters, PyTorch's defaults: `RMSpropOptions(1e-3).momentum(0.9).centered(true)`.
class RMSpropOptions : public OptimizerCloneableOptions<RMSpropOptions> {
 public:
  explicit RMSpropOptions(double lr = 1e-2) : lr_(lr) {}
  TALLY_OPTIM_ARG(double, lr);
  TALLY_OPTIM_ARG(double, alpha) = 0.99;
  TALLY_OPTIM_ARG(double, eps) = 1e-8;
  TALLY_OPTIM_ARG(double, weight_decay) = 0;
  TALLY_OPTIM_ARG(double, momentum) = 0;
  TALLY_OPTIM_ARG(bool, centered) = false;

 public:
  Hypers hypers() override;
  void validate() const override;
};

/// torch.optim.RMSprop; state `square_avg`, plus `momentum_buffer` with momentum and `grad_avg`
/// when centered. Ledger row `rmsprop_step`.
class RMSprop : public OptimizerOf<RMSpropOptions> {
 public:
  using OptimizerOf::OptimizerOf;

 protected:
  std::string_view step_name() const override { return "rmsprop_step"; }
  std::vector<std::pair<std::string, double>> state_init(const OptimizerOptions& options) const override;
  ops::Cost update(Tensor& param, const Tensor& grad, OptimizerParamState& state, const OptimizerOptions& options) override;
};

}  // namespace tally::optim
