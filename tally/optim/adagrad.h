#pragma once
// AdaGrad: PyTorch 1.13's torch.optim.Adagrad (eps outside the square root, learning-rate
// decay by step), run as one fused pass per parameter (Note [Fused update]).

#include "tally/optim/optimizer.h"

namespace tally::optim {

/// AdaGrad's hyper-parameters, PyTorch's defaults: `AdagradOptions(0.1).lr_decay(1e-3)`.
class AdagradOptions : public OptimizerCloneableOptions<AdagradOptions> {
 public:
  explicit AdagradOptions(double lr = 1e-2) : lr_(lr) {}
  TALLY_OPTIM_ARG(double, lr);
  TALLY_OPTIM_ARG(double, lr_decay) = 0;
  TALLY_OPTIM_ARG(double, weight_decay) = 0;
  TALLY_OPTIM_ARG(double, initial_accumulator_value) = 0;
  TALLY_OPTIM_ARG(double, eps) = 1e-10;

 public:
  Hypers hypers() override;
  void validate() const override;
};

/// torch.optim.Adagrad; state `sum` (the running sum of squared gradients). Ledger row `adagrad_step`.
class Adagrad : public OptimizerOf<AdagradOptions> {
 public:
  using OptimizerOf::OptimizerOf;

 protected:
  std::string_view step_name() const override { return "adagrad_step"; }
  std::vector<std::pair<std::string, double>> state_init(const OptimizerOptions& options) const override;
  ops::Cost update(Tensor& param, const Tensor& grad, OptimizerParamState& state, const OptimizerOptions& options) override;
};

}  // namespace tally::optim
