#pragma once
// softmax and log_softmax: fused single-pass-over-memory kernels.

#include "tally/core/tensor.h"

namespace tally {

/// exp(x - max) / sum(exp(x - max)) along `dim`.
Tensor softmax(const Tensor& x, int64_t dim);
/// x - max - log(sum(exp(x - max))) along `dim`.
Tensor log_softmax(const Tensor& x, int64_t dim);
/// softmax(scale · scores) along the last dim, with, when `is_causal`, row i of each [..., L, S]
/// matrix seeing columns 0..i only (PyTorch's is_causal); masked entries are 0. Attention's
/// probabilities as one op: scale > 0.
Tensor attention_softmax(const Tensor& scores, double scale, bool is_causal);

}  // namespace tally
