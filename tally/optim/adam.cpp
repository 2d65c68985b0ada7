// Note [Fused update] in fused.h: the compiler may not fuse a multiply and an add that PyTorch
// rounds separately; the fused multiply-adds PyTorch does make are written as std::fma.
#pragma GCC optimize("fp-contract=off")

#include "tally/optim/adam.h"

#include <algorithm>
#include <cmath>

#include "tally/kernels/cpu/dispatch.h"
#include "tally/kernels/cuda/kernels.h"
#include "tally/kernels/update_scalars.h"
#include "tally/optim/fused.h"

namespace tally::optim {

namespace {

/// The per-element update: PyTorch's AdamW p = (1 − lr·wd)·p, Adam g = g + wd·p;
/// m = β1·m + (1 − β1)·g; v = β2·v + (1 − β2)·g²; AMSGrad v̂ = max(v̂, v) (NaN if either is);
/// p = p − step_size·m / (√v̂ / √bc2 + eps).
template <size_t kStates>
void adam_kernel(const AdamScalars& h, const detail::FusedArrays& a) {
  detail::run_fused<kStates>(
      [&]<class T>() {
        return [c = AdamConstants<T>(h)](T& p, T g, T& m, T& v, auto&... v_max) {
          if (c.decoupled) p = p * c.decay;
          if (c.l2) g = std::fma(p, c.weight_decay, g);
          m = std::fma(g, c.one_minus_beta1, m * c.beta1);
          v = std::fma(c.one_minus_beta2 * g, g, v * c.beta2);
          T v_hat = v;
          // torch.maximum's NaN rule: a NaN v is kept (std::max would keep the old v̂ instead).
          ((v_max = v != v ? v : std::max(v_max, v), v_hat = v_max), ...);
          p = p + (c.neg_step_size * m) / (std::sqrt(v_hat) / c.bias_correction2_sqrt + c.eps);
        };
      },
      a);
}

}  // namespace

#if TALLY_PRIMARY_PASS
namespace {

/// The hyper-parameters the shared update reads.
struct AdamHypers {
  double lr, beta1, beta2, eps, weight_decay;
  bool amsgrad;
  bool decoupled;  // AdamW: decay the parameter, not the gradient
};

/// One fused Adam or AdamW update of a parameter; returns its cost.
ops::Cost adam_update(std::string_view op, const Tensor& param, const Tensor& grad, OptimizerParamState& state, const AdamHypers& h) {
  const double t = static_cast<double>(state.step);
  const double bias_correction1 = 1 - std::pow(h.beta1, t), bias_correction2 = 1 - std::pow(h.beta2, t);
  const bool l2 = !h.decoupled && h.weight_decay != 0;
  const AdamScalars scalars{1 - h.lr * h.weight_decay, h.weight_decay, h.beta1, h.beta2, std::sqrt(bias_correction2), h.eps,
                            -(h.lr / bias_correction1), l2, h.decoupled};
  const auto on_gpu = [&](const detail::FusedArrays& a) {
    kernels::cuda::adam_update(static_cast<uint8_t>(a.dtype), a.n, a.p, a.g, a.state[0], a.state[1], h.amsgrad ? a.state[2] : nullptr,
                               scalars);
  };
  if (h.amsgrad) {
    detail::fused_update(op, param, grad, state, {"exp_avg", "exp_avg_sq", "max_exp_avg_sq"},
                         [&](const detail::FusedArrays& a) { cpu_kernels().run<&adam_kernel<3>>(scalars, a); }, on_gpu);
  } else {
    detail::fused_update(op, param, grad, state, {"exp_avg", "exp_avg_sq"},
                         [&](const detail::FusedArrays& a) { cpu_kernels().run<&adam_kernel<2>>(scalars, a); }, on_gpu);
  }
  // FLOPs per element: AdamW's decay 1 (mul) or Adam's weight decay 2 (mul, add), none when
  // wd = 0; m 3 (mul, mul, add); v 4 (mul, mul, mul, add); AMSGrad 1 (max); denominator 3
  // (sqrt, div, add); the step 3 (mul, div, add). AdamW: 14 per element, 15 with AMSGrad.
  // Bytes: read p, g, m, v (+ v̂); write p, m, v (+ v̂).
  const int64_t flops = (h.decoupled ? 1 : 2 * l2) + 3 + 4 + h.amsgrad + 3 + 3;
  return detail::fused_cost(param, flops, 4 + h.amsgrad, 3 + h.amsgrad);
}

}  // namespace

template <bool kDecoupled>
Hypers AdamFamilyOptions<kDecoupled>::hypers() {
  return {{"lr", &lr_}, {"beta1", &std::get<0>(betas_)}, {"beta2", &std::get<1>(betas_)}, {"eps", &eps_},
          {"weight_decay", &weight_decay_}, {"amsgrad", &amsgrad_}};
}

template <bool kDecoupled>
void AdamFamilyOptions<kDecoupled>::validate() const {
  const auto [beta1, beta2] = betas_;
  detail::check_hyper(lr_ >= 0.0, "learning rate", lr_);
  detail::check_hyper(eps_ >= 0.0, "epsilon value", eps_);
  detail::check_hyper(beta1 >= 0.0 && beta1 < 1.0, "beta parameter at index 0", beta1);
  detail::check_hyper(beta2 >= 0.0 && beta2 < 1.0, "beta parameter at index 1", beta2);
  detail::check_hyper(weight_decay_ >= 0.0, "weight_decay value", weight_decay_);
}

template <bool kDecoupled>
std::vector<std::pair<std::string, double>> AdamFamily<kDecoupled>::state_init(const OptimizerOptions& options) const {
  std::vector<std::pair<std::string, double>> names{{"exp_avg", 0.0}, {"exp_avg_sq", 0.0}};
  if (this->options_of(options).amsgrad()) names.emplace_back("max_exp_avg_sq", 0.0);
  return names;
}

template <bool kDecoupled>
ops::Cost AdamFamily<kDecoupled>::update(Tensor& param, const Tensor& grad, OptimizerParamState& state,
                                         const OptimizerOptions& options) {
  const auto& o = this->options_of(options);
  const auto [beta1, beta2] = o.betas();
  return adam_update(step_name(), param, grad, state, {o.lr(), beta1, beta2, o.eps(), o.weight_decay(), o.amsgrad(), kDecoupled});
}

template class AdamFamilyOptions<false>;
template class AdamFamilyOptions<true>;
template class AdamFamily<false>;
template class AdamFamily<true>;

#endif  // TALLY_PRIMARY_PASS

}  // namespace tally::optim

TALLY_CPU_KERNELS(optim_adam, &optim::adam_kernel<2>, &optim::adam_kernel<3>)
