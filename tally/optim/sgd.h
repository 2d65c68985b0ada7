#pragma once
// Stochastic gradient descent with momentum, dampening, Nesterov and L2 weight decay: PyTorch
// 1.13's torch.optim.SGD, run as one fused pass per parameter (Note [Fused update]).

#include "tally/optim/optimizer.h"

namespace tally::optim {

/// SGD's hyper-parameters: `SGDOptions(0.1).momentum(0.9).nesterov(true)`.
class SGDOptions : public OptimizerCloneableOptions<SGDOptions> {
 public:
  /// SGD has no default learning rate.
  explicit SGDOptions(double lr) : lr_(lr) {}
  TALLY_OPTIM_ARG(double, lr);
  TALLY_OPTIM_ARG(double, momentum) = 0;
  TALLY_OPTIM_ARG(double, dampening) = 0;
  TALLY_OPTIM_ARG(double, weight_decay) = 0;
  TALLY_OPTIM_ARG(bool, nesterov) = false;

 public:
  Hypers hypers() override;
  void validate() const override;
};

/// torch.optim.SGD; state `momentum_buffer` when momentum is on. Ledger row `sgd_step`.
class SGD : public OptimizerOf<SGDOptions> {
 public:
  using OptimizerOf::OptimizerOf;

 protected:
  std::string_view step_name() const override { return "sgd_step"; }
  std::vector<std::pair<std::string, double>> state_init(const OptimizerOptions& options) const override;
  ops::Cost update(Tensor& param, const Tensor& grad, OptimizerParamState& state, const OptimizerOptions& options) override;
};

}  // namespace tally::optim
