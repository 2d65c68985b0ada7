#pragma once
// One Adam or AdamW step's scalars, worked out in double on the host by tally/optim/adam.cpp and
// read by its CPU kernel and its CUDA kernel (tally/kernels/cuda/optim.cu) alike: a plain struct,
// so that the CUDA sources can include it without the library's headers.

namespace tally::optim {

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

}  // namespace tally::optim
