#pragma once
// Loss functions (torch.nn.functional's): cross-entropy fused from log-softmax and negative
// log-likelihood so that the [N, C] log-probabilities are never stored (loss.cpp), and, composed
// of other ops (loss_composed.cpp), mean squared error, nll_loss and binary cross-entropy.

#include <cstdint>

#include "tally/core/tensor.h"

namespace tally {

/// How a loss reduces its per-element values (PyTorch's reduction='none' | 'mean' | 'sum').
enum class Reduction : uint8_t { None, Mean, Sum };

/// Options of cross_entropy, with PyTorch's defaults: cross_entropy(x, t, {.label_smoothing = 0.1}).
struct CrossEntropyOptions {
  int64_t ignore_index = -100;   ///< targets equal to this contribute nothing, and are not counted by Mean
  Reduction reduction = Reduction::Mean;
  double label_smoothing = 0.0;  ///< in [0, 1]: the target distribution is (1 - ε)·onehot + ε/C
};

/// Cross-entropy between logits `input` ([N, C], [C], or [N, C, d1, ...] with classes in dim 1)
/// and class indices `target` (int64, the shape of input without the class dim). Stable for any
/// logits (log-sum-exp with the row max subtracted).
Tensor cross_entropy(const Tensor& input, const Tensor& target, const CrossEntropyOptions& options = {});

/// Mean squared error (input - target)², reduced; the shapes broadcast as in PyTorch.
Tensor mse_loss(const Tensor& input, const Tensor& target, Reduction reduction = Reduction::Mean);

/// Negative log-likelihood of class indices `target` under log-probabilities `input` (shapes as
/// cross_entropy's): −input[i, target[i]], reduced; targets equal to ignore_index contribute 0
/// and are not counted by Mean (torch.nn.functional.nll_loss without class weights).
Tensor nll_loss(const Tensor& input, const Tensor& target, int64_t ignore_index = -100, Reduction reduction = Reduction::Mean);

/// Binary cross-entropy of probabilities `input` in [0, 1] against `target` of its shape:
/// −(t·log p + (1 − t)·log(1 − p)), each log clamped at −100 as PyTorch's.
Tensor binary_cross_entropy(const Tensor& input, const Tensor& target, Reduction reduction = Reduction::Mean);

/// The same from logits, computed stably for any logit (PyTorch's log-sum-exp form):
/// (1 − t)·x + m + log(e⁻ᵐ + e^(−x−m)) with m = max(−x, 0).
Tensor binary_cross_entropy_with_logits(const Tensor& input, const Tensor& target, Reduction reduction = Reduction::Mean);

}  // namespace tally
