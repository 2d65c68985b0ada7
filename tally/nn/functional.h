#pragma once
// torch.nn.functional: the stateless forms of the layers, composed of tally ops (so each gets its
// cost, memory category and backward from ops::apply), and the losses.

#include <optional>

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
/// softmax(q·kᵀ/√d_head [masked above the diagonal when causal])·v over [..., T, d_head] inputs.
Tensor scaled_dot_product_attention(const Tensor& q, const Tensor& k, const Tensor& v, bool is_causal = false);

}  // namespace tally::nn::functional

namespace tally::nn {
namespace F = functional;
}  // namespace tally::nn
