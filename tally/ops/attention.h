#pragma once
// Attention as one op, forward and backward.

#include <optional>

#include "tally/core/tensor.h"

namespace tally {

/// softmax(scale · query keyᵀ) value, as PyTorch's torch.nn.functional.scaled_dot_product_attention
/// without attn_mask and dropout: query [..., L, E], key [..., S, E] and value [..., S, Ev] with the
/// same batch dims give [..., L, Ev]. scale defaults to 1/√E; with is_causal, query row i sees keys
/// 0..i (the upper-left triangle, as PyTorch's is_causal). Nothing but the inputs is kept for
/// backward: the probabilities are recomputed there, block by block.
Tensor scaled_dot_product_attention(const Tensor& query, const Tensor& key, const Tensor& value, bool is_causal = false,
                                    std::optional<double> scale = std::nullopt);

}  // namespace tally
