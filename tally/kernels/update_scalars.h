#pragma once
// The scalars of one optimizer step, worked out in double on the host by the optimizer's file
// (tally/optim/adam.cpp, sgd.cpp, adagrad.cpp, rmsprop.cpp), and the same rounded to the parameters' element type, which
// is what its CPU kernel and its CUDA kernel (tally/kernels/cuda/optim.cu) read: one rounding
// for both, so that a step on either device gives the same bits. Plain structs, so that the CUDA
// sources can include them without the library's headers; here, beside both kernel sets, so that
// neither reaches up into optim/. The constructors are always inlined:
// the CPU kernels are built once per target, and no out-of-line copy may be shared between them
// (Note [CPU kernel dispatch]).

namespace tally::optim {

/// Adam and AdamW.
struct AdamScalars {
  double decay;                  ///< AdamW: 1 − lr·weight_decay
  double weight_decay;           ///< Adam's L2 term
  double beta1, beta2;
  double bias_correction2_sqrt;  ///< √(1 − β2^t)
  double eps;
  double neg_step_size;          ///< −lr / (1 − β1^t)
  bool l2;                       ///< Adam with weight decay: g + wd·p
  bool decoupled;                ///< AdamW: the parameter decays
};

/// AdamScalars rounded to T once per step, as PyTorch rounds its scalar arguments to the
/// tensors' dtype.
template <class T>
struct AdamConstants {
  T decay, weight_decay, beta1, beta2, one_minus_beta1, one_minus_beta2, bias_correction2_sqrt, eps, neg_step_size;
  bool l2, decoupled;
  [[gnu::always_inline]] explicit AdamConstants(const AdamScalars& h)
      : decay(T(h.decay)), weight_decay(T(h.weight_decay)), beta1(T(h.beta1)), beta2(T(h.beta2)), one_minus_beta1(T(1 - h.beta1)),
        one_minus_beta2(T(1 - h.beta2)), bias_correction2_sqrt(T(h.bias_correction2_sqrt)), eps(T(h.eps)),
        neg_step_size(T(h.neg_step_size)), l2(h.l2), decoupled(h.decoupled) {}
};

/// SGD with optional weight decay, momentum and Nesterov.
struct SgdScalars {
  double weight_decay, momentum, dampening, lr;
  bool decay;     ///< weight_decay ≠ 0
  bool nesterov;
  bool first;     ///< the first step: the momentum buffer starts as the gradient
};

/// SgdScalars rounded to T once per step.
template <class T>
struct SgdConstants {
  T weight_decay, momentum, one_minus_dampening, neg_lr;
  bool decay, nesterov, first;
  [[gnu::always_inline]] explicit SgdConstants(const SgdScalars& h)
      : weight_decay(T(h.weight_decay)), momentum(T(h.momentum)), one_minus_dampening(T(1.0 - h.dampening)), neg_lr(T(-h.lr)),
        decay(h.decay), nesterov(h.nesterov), first(h.first) {}
};

/// Adagrad.
struct AdagradScalars {
  double weight_decay, eps, clr;  ///< clr: lr / (1 + (step − 1)·lr_decay)
  bool decay;                     ///< weight_decay ≠ 0
};

/// AdagradScalars rounded to T once per step.
template <class T>
struct AdagradConstants {
  T weight_decay, eps, neg_clr;
  bool decay;
  [[gnu::always_inline]] explicit AdagradConstants(const AdagradScalars& h)
      : weight_decay(T(h.weight_decay)), eps(T(h.eps)), neg_clr(T(-h.clr)), decay(h.decay) {}
};

/// RMSprop, plain, with momentum, centered, or both.
struct RmspropScalars {
  double weight_decay, alpha, eps, momentum, lr;
  bool decay;         ///< weight_decay ≠ 0
  bool use_momentum;  ///< momentum > 0
};

/// RmspropScalars rounded to T once per step.
template <class T>
struct RmspropConstants {
  T weight_decay, alpha, one_minus_alpha, eps, momentum, neg_lr;
  bool decay, use_momentum;
  [[gnu::always_inline]] explicit RmspropConstants(const RmspropScalars& h)
      : weight_decay(T(h.weight_decay)), alpha(T(h.alpha)), one_minus_alpha(T(1.0 - h.alpha)), eps(T(h.eps)), momentum(T(h.momentum)),
        neg_lr(T(-h.lr)), decay(h.decay), use_momentum(h.use_momentum) {}
};

}  // namespace tally::optim
