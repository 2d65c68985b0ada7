// Note [Fused update] in fused.h: the compiler may not fuse a multiply and an add that PyTorch
// rounds separately; the fused multiply-adds PyTorch does make are written as std::fma.
#pragma GCC optimize("fp-contract=off")

#include "tally/optim/adagrad.h"

#include <cmath>

#include "tally/kernels/cpu/dispatch.h"
#include "tally/kernels/cuda/kernels.h"
#include "tally/optim/fused.h"
#include "tally/kernels/update_scalars.h"

namespace tally::optim {

namespace {

/// PyTorch: g = g + wd·p; sum = sum + g·g; p = p − clr·g / (√sum + eps).
void adagrad_kernel(const AdagradScalars& h, const detail::FusedArrays& a) {
  detail::run_fused<1>(
      [&]<class T>() {
        return [c = AdagradConstants<T>(h)](T& p, T g, T& sum) {
          if (c.decay) g = std::fma(p, c.weight_decay, g);
          sum = std::fma(g, g, sum);
          p = p + (c.neg_clr * g) / (std::sqrt(sum) + c.eps);
        };
      },
      a);
}

}  // namespace

#if TALLY_PRIMARY_PASS

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
  const AdagradScalars scalars{o.weight_decay(), o.eps(), clr, decay};
  detail::fused_update(
      "adagrad_step", param, grad, state, {"sum"}, [&](const detail::FusedArrays& a) { cpu_kernels().run<&adagrad_kernel>(scalars, a); },
      [&](const detail::FusedArrays& a) { kernels::cuda::adagrad_update(static_cast<uint8_t>(a.dtype), a.n, a.p, a.g, a.state[0], scalars); });
  // FLOPs per element: weight decay 2 (mul, add); sum 2 (mul, add); denominator 2 (sqrt, add);
  // the step 3 (mul, div, add). Bytes: read p, g, sum; write p, sum.
  return detail::fused_cost(param, 2 * decay + 7, 3, 2);
}

#endif  // TALLY_PRIMARY_PASS

}  // namespace tally::optim

TALLY_CPU_KERNELS(optim_adagrad, &optim::adagrad_kernel)
