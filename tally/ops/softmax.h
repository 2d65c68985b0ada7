#pragma once
// softmax and log_softmax: fused single-pass-over-memory kernels.

#include "tally/core/tensor.h"

namespace tally {

/// exp(x - max) / sum(exp(x - max)) along `dim`.
Tensor softmax(const Tensor& x, int64_t dim);
/// x - max - log(sum(exp(x - max))) along `dim`.
Tensor log_softmax(const Tensor& x, int64_t dim);

}  // namespace tally
