#pragma once
// Adam: PyTorch 1.13's torch.optim.Adam (L2 weight decay added to the gradient, AMSGrad), run
// as one fused pass per parameter (Note [Fused update]). AdamW (adamw.h) shares its update.

#include <tuple>

#include "tally/optim/optimizer.h"

namespace tally::optim {

/// Adam's hyper-parameters, PyTorch's defaults: `AdamOptions(3e-4).betas({0.9, 0.95})`.
class AdamOptions : public OptimizerCloneableOptions<AdamOptions> {
 public:
  /// (β1, β2): the decay rates of the first and second moment averages.
  using Betas = std::tuple<double, double>;
  explicit AdamOptions(double lr = 1e-3) : lr_(lr) {}
  TALLY_OPTIM_ARG(double, lr);
  TALLY_OPTIM_ARG(Betas, betas) = std::make_tuple(0.9, 0.999);
  TALLY_OPTIM_ARG(double, eps) = 1e-8;
  TALLY_OPTIM_ARG(double, weight_decay) = 0;
  TALLY_OPTIM_ARG(bool, amsgrad) = false;

 public:
  Hypers hypers() override;
  void validate() const override;
};

/// torch.optim.Adam; state `exp_avg`, `exp_avg_sq`, and `max_exp_avg_sq` with AMSGrad. Ledger row `adam_step`.
class Adam : public Optimizer {
 public:
  /// Adam over `param_groups`, groups without options taking `defaults`.
  Adam(std::vector<OptimizerParamGroup> param_groups, AdamOptions defaults = AdamOptions());
  /// Adam over one group of parameters.
  Adam(std::vector<Tensor> params, AdamOptions defaults = AdamOptions());

 protected:
  std::string_view step_name() const override { return "adam_step"; }
  std::vector<std::pair<std::string, double>> state_init(const OptimizerOptions& options) const override;
  ops::Cost update(Tensor& param, const Tensor& grad, OptimizerParamState& state, const OptimizerOptions& options) override;
};

namespace detail {
/// Adam's and AdamW's hyper-parameters, as the shared update reads them.
struct AdamHypers {
  double lr, beta1, beta2, eps, weight_decay;
  bool amsgrad;
  bool decoupled;  ///< AdamW: decay the parameter, not the gradient
};
/// Raises PyTorch's errors for Adam's and AdamW's hyper-parameters.
void validate_adam(double lr, const std::tuple<double, double>& betas, double eps, double weight_decay);
/// The state names Adam and AdamW start a parameter with.
std::vector<std::pair<std::string, double>> adam_state_init(bool amsgrad);
/// One fused Adam or AdamW update of a parameter; returns its cost.
ops::Cost adam_update(std::string_view op, const Tensor& param, const Tensor& grad, OptimizerParamState& state, const AdamHypers& h);
}  // namespace detail

}  // namespace tally::optim
