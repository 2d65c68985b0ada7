#pragma once
// The scalars of one optimizer step, worked out in double on the host by the optimizer's file
// (tally/optim/adam.cpp, sgd.cpp) and read by its CPU kernel and its CUDA kernel
// (tally/kernels/cuda/optim.cu) alike: plain structs, so that the CUDA sources can include them
// without the library's headers.

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

/// SGD with optional weight decay, momentum and Nesterov.
struct SgdScalars {
  double weight_decay, momentum, dampening, lr;
  bool decay;     ///< weight_decay ≠ 0
  bool nesterov;
  bool first;     ///< the first step: the momentum buffer starts as the gradient
};

}  // namespace tally::optim
