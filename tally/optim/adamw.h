#pragma once
// AdamW: PyTorch 1.13's torch.optim.AdamW (weight decay applied to the parameter, decoupled from
// the gradient), run as one fused pass per parameter (Note [Fused update]).

#include <tuple>

#include "tally/optim/optimizer.h"

namespace tally::optim {

/// AdamW's hyper-parameters, PyTorch's defaults (weight decay 1e-2): `AdamWOptions(1e-3).weight_decay(0.1)`.
class AdamWOptions : public OptimizerCloneableOptions<AdamWOptions> {
 public:
  /// (β1, β2): the decay rates of the first and second moment averages.
  using Betas = std::tuple<double, double>;
  explicit AdamWOptions(double lr = 1e-3) : lr_(lr) {}
  TALLY_OPTIM_ARG(double, lr);
  TALLY_OPTIM_ARG(Betas, betas) = std::make_tuple(0.9, 0.999);
  TALLY_OPTIM_ARG(double, eps) = 1e-8;
  TALLY_OPTIM_ARG(double, weight_decay) = 1e-2;
  TALLY_OPTIM_ARG(bool, amsgrad) = false;

 public:
  Hypers hypers() override;
  void validate() const override;
};

/// torch.optim.AdamW; state `exp_avg`, `exp_avg_sq`, and `max_exp_avg_sq` with AMSGrad: 2 (or 3)
/// tensors of the parameter's size, the lecture's 4 + 4 bytes per float32 parameter. Ledger row `adamw_step`.
class AdamW : public Optimizer {
 public:
  /// AdamW over `param_groups`, groups without options taking `defaults`.
  AdamW(std::vector<OptimizerParamGroup> param_groups, AdamWOptions defaults = AdamWOptions());
  /// AdamW over one group of parameters.
  AdamW(std::vector<Tensor> params, AdamWOptions defaults = AdamWOptions());

 protected:
  std::string_view step_name() const override { return "adamw_step"; }
  std::vector<std::pair<std::string, double>> state_init(const OptimizerOptions& options) const override;
  ops::Cost update(Tensor& param, const Tensor& grad, OptimizerParamState& state, const OptimizerOptions& options) override;
};

}  // namespace tally::optim
