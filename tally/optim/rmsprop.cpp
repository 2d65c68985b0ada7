// Note [Fused update] in fused.h: the compiler may not fuse a multiply and an add that PyTorch
// rounds separately; the fused multiply-adds PyTorch does make are written as std::fma.
#pragma GCC optimize("fp-contract=off")

#include "tally/optim/rmsprop.h"

#include <cmath>
#include <tuple>

#include "tally/kernels/cpu/dispatch.h"
#include "tally/kernels/cuda/kernels.h"
#include "tally/optim/fused.h"
#include "tally/kernels/update_scalars.h"

namespace tally::optim {

namespace {

/// PyTorch: g = g + wd·p; sq = α·sq + (1 − α)·g²; centered: ga = α·ga + (1 − α)·g and
/// avg = √(sq − ga²) + eps, else avg = √sq + eps; with momentum buf = μ·buf + g/avg and
/// p = p − lr·buf, else p = p − lr·g/avg. The states after square_avg are momentum_buffer,
/// grad_avg, or both in that order.
template <size_t kStates>
void rmsprop_kernel(const RmspropScalars& h, const detail::FusedArrays& a) {
  detail::run_fused<kStates>(
      [&]<class T>() {
        return [c = RmspropConstants<T>(h)](T& p, T g, T& sq, auto&... rest) {
          if (c.decay) g = std::fma(p, c.weight_decay, g);
          sq = std::fma(c.one_minus_alpha * g, g, sq * c.alpha);
          auto plain_avg = [&] { return std::sqrt(sq) + c.eps; };
          auto centered_avg = [&](T& ga) {
            ga = std::fma(g, c.one_minus_alpha, ga * c.alpha);
            return std::sqrt(std::fma(-ga, ga, sq)) + c.eps;
          };
          auto momentum_step = [&](T avg, T& buf) {
            buf = buf * c.momentum + g / avg;
            p = std::fma(buf, c.neg_lr, p);
          };
          if constexpr (sizeof...(rest) == 0) {
            p = p + (c.neg_lr * g) / plain_avg();
          } else if constexpr (sizeof...(rest) == 2) {
            auto [buf, ga] = std::tie(rest...);
            momentum_step(centered_avg(ga), buf);
          } else if (c.use_momentum) {
            momentum_step(plain_avg(), rest...);
          } else {
            p = p + (c.neg_lr * g) / centered_avg(rest...);
          }
        };
      },
      a);
}

}  // namespace

#if TALLY_PRIMARY_PASS

Hypers RMSpropOptions::hypers() {
  return {{"lr", &lr_}, {"alpha", &alpha_}, {"eps", &eps_}, {"weight_decay", &weight_decay_}, {"momentum", &momentum_},
          {"centered", &centered_}};
}

void RMSpropOptions::validate() const {
  detail::check_hyper(lr_ >= 0.0, "learning rate", lr_);
  detail::check_hyper(eps_ >= 0.0, "epsilon value", eps_);
  detail::check_hyper(momentum_ >= 0.0, "momentum value", momentum_);
  detail::check_hyper(weight_decay_ >= 0.0, "weight_decay value", weight_decay_);
  detail::check_hyper(alpha_ >= 0.0, "alpha value", alpha_);
}


std::vector<std::pair<std::string, double>> RMSprop::state_init(const OptimizerOptions& options) const {
  const auto& o = options_of(options);
  std::vector<std::pair<std::string, double>> names{{"square_avg", 0.0}};
  if (o.momentum() > 0) names.emplace_back("momentum_buffer", 0.0);
  if (o.centered()) names.emplace_back("grad_avg", 0.0);
  return names;
}

ops::Cost RMSprop::update(Tensor& param, const Tensor& grad, OptimizerParamState& state, const OptimizerOptions& options) {
  const auto& o = options_of(options);
  const bool decay = o.weight_decay() != 0, momentum = o.momentum() > 0, centered = o.centered();
  const RmspropScalars scalars{o.weight_decay(), o.alpha(), o.eps(), o.momentum(), o.lr(), decay, momentum};
  auto kernel = [&]<size_t kStates>() {
    return [&](const detail::FusedArrays& a) { cpu_kernels().run<&rmsprop_kernel<kStates>>(scalars, a); };
  };
  // The states after square_avg in the order state_init made them: momentum_buffer, grad_avg.
  const auto on_gpu = [&](const detail::FusedArrays& a) {
    kernels::cuda::rmsprop_update(static_cast<uint8_t>(a.dtype), a.n, a.p, a.g, a.state[0], momentum ? a.state[1] : nullptr,
                                  centered ? a.state[momentum ? 2 : 1] : nullptr, scalars);
  };
  if (momentum && centered) {
    detail::fused_update("rmsprop_step", param, grad, state, {"square_avg", "momentum_buffer", "grad_avg"},
                         kernel.template operator()<3>(), on_gpu);
  } else if (momentum || centered) {
    detail::fused_update("rmsprop_step", param, grad, state, {"square_avg", momentum ? "momentum_buffer" : "grad_avg"},
                         kernel.template operator()<2>(), on_gpu);
  } else {
    detail::fused_update("rmsprop_step", param, grad, state, {"square_avg"}, kernel.template operator()<1>(), on_gpu);
  }
  // FLOPs per element: weight decay 2 (mul, add); square_avg 4 (mul, mul, mul, add); centered
  // 5 (grad_avg: mul, mul, add; sq − ga²: mul, sub); avg 2 (sqrt, add); the step 3 (momentum:
  // buf mul, div, add; p mul, add = 5). Bytes: read p, g and each state; write p and each state.
  const int64_t states = 1 + momentum + centered;
  const int64_t flops = 2 * decay + 4 + 5 * centered + 2 + (momentum ? 5 : 3);
  return detail::fused_cost(param, flops, 2 + states, 1 + states);
}

#endif  // TALLY_PRIMARY_PASS

}  // namespace tally::optim

TALLY_CPU_KERNELS(optim_rmsprop, &optim::rmsprop_kernel<1>, &optim::rmsprop_kernel<2>, &optim::rmsprop_kernel<3>)
