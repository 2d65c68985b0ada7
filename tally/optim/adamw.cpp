#include "tally/optim/adamw.h"

#include "tally/optim/adam.h"

namespace tally::optim {

Hypers AdamWOptions::hypers() {
  return {{"lr", &lr_}, {"beta1", &std::get<0>(betas_)}, {"beta2", &std::get<1>(betas_)}, {"eps", &eps_},
          {"weight_decay", &weight_decay_}, {"amsgrad", &amsgrad_}};
}

void AdamWOptions::validate() const { detail::validate_adam(lr_, betas_, eps_, weight_decay_); }

AdamW::AdamW(std::vector<OptimizerParamGroup> param_groups, AdamWOptions defaults)
    : Optimizer(std::move(param_groups), std::make_unique<AdamWOptions>(defaults)) {}
AdamW::AdamW(std::vector<Tensor> params, AdamWOptions defaults)
    : AdamW(std::vector<OptimizerParamGroup>{OptimizerParamGroup(std::move(params))}, defaults) {}

std::vector<std::pair<std::string, double>> AdamW::state_init(const OptimizerOptions& options) const {
  return detail::adam_state_init(options_as<AdamWOptions>(options).amsgrad());
}

ops::Cost AdamW::update(Tensor& param, const Tensor& grad, OptimizerParamState& state, const OptimizerOptions& options) {
  const auto& o = options_as<AdamWOptions>(options);
  const auto [beta1, beta2] = o.betas();
  return detail::adam_update("adamw_step", param, grad, state, {o.lr(), beta1, beta2, o.eps(), o.weight_decay(), o.amsgrad(), true});
}

}  // namespace tally::optim
