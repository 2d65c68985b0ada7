// Note [Fused update] in fused.h: the compiler may not fuse a multiply and an add that PyTorch
// rounds separately; the fused multiply-adds PyTorch does make are written as std::fma.
#pragma GCC optimize("fp-contract=off")

#include "tally/optim/sgd.h"

#include <cmath>

#include "tally/kernels/cpu/dispatch.h"
#include "tally/kernels/cuda/kernels.h"
#include "tally/optim/fused.h"
#include "tally/kernels/update_scalars.h"

namespace tally::optim {

namespace {

/// PyTorch: d = g + wd·p; buf = d on the first step, else buf = momentum·buf + (1 − dampening)·d;
/// d = d + momentum·buf (Nesterov) or buf; p = p − lr·d. Its add(alpha=) is one fused
/// multiply-add on vectors, hence std::fma where PyTorch has add with alpha.
template <size_t kStates>
void sgd_kernel(const SgdScalars& h, const detail::FusedArrays& a) {
  detail::run_fused<kStates>(
      [&]<class T>() {
        return [c = SgdConstants<T>(h)](T& p, T g, auto&... buf) {
          T d = c.decay ? std::fma(p, c.weight_decay, g) : g;
          ((buf = c.first ? d : std::fma(d, c.one_minus_dampening, buf * c.momentum),
            d = c.nesterov ? std::fma(buf, c.momentum, d) : buf),
           ...);
          p = std::fma(d, c.neg_lr, p);
        };
      },
      a);
}

}  // namespace

#if TALLY_PRIMARY_PASS
Hypers SGDOptions::hypers() {
  return {{"lr", &lr_}, {"momentum", &momentum_}, {"dampening", &dampening_}, {"weight_decay", &weight_decay_}, {"nesterov", &nesterov_}};
}

void SGDOptions::validate() const {
  detail::check_hyper(lr_ >= 0.0, "learning rate", lr_);
  detail::check_hyper(momentum_ >= 0.0, "momentum value", momentum_);
  detail::check_hyper(weight_decay_ >= 0.0, "weight_decay value", weight_decay_);
  TALLY_CHECK(!nesterov_ || (momentum_ > 0 && dampening_ == 0), "Nesterov momentum requires a momentum and zero dampening");
}


std::vector<std::pair<std::string, double>> SGD::state_init(const OptimizerOptions& options) const {
  if (options_of(options).momentum() == 0) return {};
  return {{"momentum_buffer", 0.0}};
}

ops::Cost SGD::update(Tensor& param, const Tensor& grad, OptimizerParamState& state, const OptimizerOptions& options) {
  const auto& o = options_of(options);
  const bool decay = o.weight_decay() != 0, momentum = o.momentum() != 0, first = state.step == 1 || state.was_created("momentum_buffer");
  const SgdScalars scalars{o.weight_decay(), o.momentum(), o.dampening(), o.lr(), decay, o.nesterov(), first};
  const auto on_gpu = [&](const detail::FusedArrays& a) {
    kernels::cuda::sgd_update(static_cast<uint8_t>(a.dtype), a.n, a.p, a.g, momentum ? a.state[0] : nullptr, scalars);
  };
  if (momentum) {
    detail::fused_update("sgd_step", param, grad, state, {"momentum_buffer"},
                         [&](const detail::FusedArrays& a) { cpu_kernels().run<&sgd_kernel<1>>(scalars, a); }, on_gpu);
  } else {
    detail::fused_update("sgd_step", param, grad, state, {},
                         [&](const detail::FusedArrays& a) { cpu_kernels().run<&sgd_kernel<0>>(scalars, a); }, on_gpu);
  }
  // FLOPs per element: weight decay 2 (mul, add); momentum 3 (mul, mul, add; 0 on the first
  // step, a copy); Nesterov 2 (mul, add); the step 2 (mul, add). Bytes: read p, g (+ buf after
  // the first step); write p (+ buf).
  const int64_t flops = 2 * decay + (momentum && !first ? 3 : 0) + (momentum && o.nesterov() ? 2 : 0) + 2;
  return detail::fused_cost(param, flops, 2 + (momentum && !first), 1 + momentum);
}

#endif  // TALLY_PRIMARY_PASS

}  // namespace tally::optim

TALLY_CPU_KERNELS(optim_sgd, &optim::sgd_kernel<0>, &optim::sgd_kernel<1>)
