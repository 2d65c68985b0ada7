// Note [Fused update] in fused.h: the compiler may not fuse a multiply and an add that PyTorch
// rounds separately; the fused multiply-adds PyTorch does make are written as std::fma.
#pragma GCC optimize("fp-contract=off")

#include "tally/optim/adagrad.h"

#include <cmath>

#include "tally/optim/fused.h"

namespace tally::optim {

Hypers AdagradOptions::hypers() {
  return {{"lr", &lr_}, {"lr_decay", &lr_decay_}, {"weight_decay", &weight_decay_},
          {"initial_accumulator_value", &initial_accumulator_value_}, {"eps", &eps_}};
}

void AdagradOptions::validate() const {
  detail::check_hyper(lr_ >= 0.0, "learning rate", lr_);
  detail::check_hyper(lr_decay_ >= 0.0, "lr_decay value", lr_decay_);
  detail::check_hyper(weight_decay_ >= 0.0, "weight_decay value", weight_decay_);
  detail::check_hyper(initial_accumulator_value_ >= 0.0, "initial_accumulator_value value", initial_accumulator_value_);
  detail::check_hyper(eps_ >= 0.0, "epsilon value", eps_);
}


std::vector<std::pair<std::string, double>> Adagrad::state_init(const OptimizerOptions& options) const {
  return {{"sum", options_of(options).initial_accumulator_value()}};
}

ops::Cost Adagrad::update(Tensor& param, const Tensor& grad, OptimizerParamState& state, const OptimizerOptions& options) {
  const auto& o = options_of(options);
  const bool decay = o.weight_decay() != 0;
  const double clr = o.lr() / (1 + static_cast<double>(state.step - 1) * o.lr_decay());
  // PyTorch: g = g + wd·p; sum = sum + g·g; p = p − clr·g / (√sum + eps).
  auto make = [&]<class T>() {
    const T wd = T(o.weight_decay()), eps = T(o.eps()), neg_clr = T(-clr);
    return [=](T& p, T g, T& sum) {
      if (decay) g = std::fma(p, wd, g);
      sum = std::fma(g, g, sum);
      p = p + (neg_clr * g) / (std::sqrt(sum) + eps);
    };
  };
  detail::fused_update("adagrad_step", param, grad, make, state.tensors.at("sum"));
  // FLOPs per element: weight decay 2 (mul, add); sum 2 (mul, add); denominator 2 (sqrt, add);
  // the step 3 (mul, div, add). Bytes: read p, g, sum; write p, sum.
  return detail::fused_cost(param.numel(), param.element_size(), 2 * decay + 7, 3, 2);
}

}  // namespace tally::optim
