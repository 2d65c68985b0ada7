#pragma once
// torch.nn.functional: the stateless forms of the layers, composed of tally ops (so each gets its
// cost, memory category and backward from ops::apply), and the losses.

#include <optional>
#include <utility>

#include "tally/core/generator.h"
#include "tally/core/tensor.h"
#include "tally/ops/loss.h"

namespace tally::nn::functional {

using ::tally::cross_entropy;
using ::tally::CrossEntropyOptions;
using ::tally::binary_cross_entropy;
using ::tally::binary_cross_entropy_with_logits;
using ::tally::mse_loss;
using ::tally::nll_loss;
using ::tally::Reduction;

/// libtorch's spelling of the reductions (torch::kSum).
inline constexpr Reduction kNone = Reduction::None;
inline constexpr Reduction kMean = Reduction::Mean;
inline constexpr Reduction kSum = Reduction::Sum;

/// One argument of an options struct, as libtorch's TORCH_ARG: a chained setter
/// (`.reduction(F::kSum)`), a getter (`.reduction()`) and the member with its default.
#define TALLY_ARG(T, name, default_value)   \
 public:                                    \
  auto& name(T value) {                     \
    name##_ = std::move(value);             \
    return *this;                           \
  }                                         \
  const T& name() const { return name##_; } \
                                            \
 private:                                   \
  T name##_ = default_value

/// The functional losses' options, with PyTorch's defaults:
/// F::mse_loss(x, y, F::MSELossFuncOptions().reduction(F::kSum)).
struct MSELossFuncOptions {
  TALLY_ARG(Reduction, reduction, kMean);
};
struct BinaryCrossEntropyFuncOptions {
  TALLY_ARG(Reduction, reduction, kMean);
};
struct BinaryCrossEntropyWithLogitsFuncOptions {
  TALLY_ARG(Reduction, reduction, kMean);
};
struct NLLLossFuncOptions {
  TALLY_ARG(int64_t, ignore_index, -100);
  TALLY_ARG(Reduction, reduction, kMean);
};
struct CrossEntropyFuncOptions {
  TALLY_ARG(int64_t, ignore_index, -100);
  TALLY_ARG(Reduction, reduction, kMean);
  TALLY_ARG(double, label_smoothing, 0.0);
};

inline Tensor mse_loss(const Tensor& input, const Tensor& target, const MSELossFuncOptions& o) {
  return ::tally::mse_loss(input, target, o.reduction());
}
inline Tensor binary_cross_entropy(const Tensor& input, const Tensor& target, const BinaryCrossEntropyFuncOptions& o) {
  return ::tally::binary_cross_entropy(input, target, o.reduction());
}
inline Tensor binary_cross_entropy_with_logits(const Tensor& input, const Tensor& target, const BinaryCrossEntropyWithLogitsFuncOptions& o) {
  return ::tally::binary_cross_entropy_with_logits(input, target, o.reduction());
}
inline Tensor nll_loss(const Tensor& input, const Tensor& target, const NLLLossFuncOptions& o) {
  return ::tally::nll_loss(input, target, o.ignore_index(), o.reduction());
}
inline Tensor cross_entropy(const Tensor& input, const Tensor& target, const CrossEntropyFuncOptions& o) {
  return ::tally::cross_entropy(input, target, {.ignore_index = o.ignore_index(), .reduction = o.reduction(), .label_smoothing = o.label_smoothing()});
}

/// x·Wᵀ + b, with W [out, in] (PyTorch's layout) and b [out] or undefined.
Tensor linear(const Tensor& x, const Tensor& weight, const Tensor& bias = {});
/// Normalise over the last `normalized_dims` dims to mean 0, variance 1 (biased), then scale by
/// `weight` and shift by `bias` where defined.
Tensor layer_norm(const Tensor& x, int64_t normalized_dims, const Tensor& weight = {}, const Tensor& bias = {}, double eps = 1e-5);
/// x / √(mean(x²) + eps) over the last `normalized_dims` dims, times `weight` where defined; eps
/// defaults to the dtype's machine epsilon (torch.nn.functional.rms_norm).
Tensor rms_norm(const Tensor& x, int64_t normalized_dims, const Tensor& weight = {}, std::optional<double> eps = std::nullopt);
/// In training, zero each element with probability p and scale the rest by 1/(1 − p); the
/// identity otherwise.
Tensor dropout(const Tensor& x, double p = 0.5, bool training = true, Generator* gen = nullptr);
/// torch.nn.functional.scaled_dot_product_attention, in libtorch's argument order:
/// softmax(q·kᵀ·scale + mask)·v over q [..., L, E], k [..., S, E], v [..., S, Ev], the batch dims
/// broadcast. scale defaults to 1/√E. is_causal lets query row i see keys 0..i.
///
/// attn_mask broadcasts to the scores, [..., L, S]. A bool mask says which keys take part (true:
/// attended); any other mask (float32 or q's dtype) is added to the scaled scores. A query row
/// whose keys are all masked gives zeros, as PyTorch 2.5's `_safe_softmax`, not NaN. dropout_p
/// drops probabilities (whatever a module's mode, as PyTorch's functional does), drawn from `gen`.
///
/// Without a mask and dropout it is one fused op that keeps no scores; with either it is
/// composed of ops (the products, the mask, softmax, dropout), which the ledger lists one by one
/// and whose [..., L, S] probabilities are kept for backward.
Tensor scaled_dot_product_attention(const Tensor& q, const Tensor& k, const Tensor& v, const std::optional<Tensor>& attn_mask = std::nullopt,
                                    double dropout_p = 0.0, bool is_causal = false, std::optional<double> scale = std::nullopt,
                                    Generator* gen = nullptr);

}  // namespace tally::nn::functional

namespace tally::nn {
namespace F = functional;
}  // namespace tally::nn
