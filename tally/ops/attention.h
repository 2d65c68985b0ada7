#pragma once
// Attention as one op, forward and backward.

#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "tally/core/tensor.h"

namespace tally {

/// softmax(scale · query keyᵀ) value, as PyTorch's torch.nn.functional.scaled_dot_product_attention
/// without attn_mask and dropout: query [..., L, E], key [..., S, E] and value [..., S, Ev] with the
/// same batch dims give [..., L, Ev]. scale defaults to 1/√E; with is_causal, query row i sees keys
/// 0..i (the upper-left triangle, as PyTorch's is_causal). Nothing but the inputs is kept for
/// backward: the probabilities are recomputed there, block by block.
Tensor scaled_dot_product_attention(const Tensor& query, const Tensor& key, const Tensor& value, bool is_causal = false,
                                    std::optional<double> scale = std::nullopt);

/// The same on query, key and value stacked per position, as a projection to 3·h·E features lays
/// them out: qkv [..., T, 3, h, E] (flash-attention's qkvpacked layout) gives [..., T, h, E], i.e.
/// the heads' outputs side by side, [..., T, h·E] as a view. The heads are read and written where
/// they lie, with no permuted copies, and the backward writes qkv's gradient as one tensor in
/// qkv's layout, where three heads cut from one projection would each get a zero-filled gradient
/// of all of it, added up after.
Tensor scaled_dot_product_attention_packed(const Tensor& qkv, bool is_causal = false, std::optional<double> scale = std::nullopt);

/// The scale attention uses: `scale`, or PyTorch's default 1/√E (E = query.size(-1)).
double attention_scale(const Tensor& query, std::optional<double> scale);

/// scaled_dot_product_attention's checks of its inputs (ranks, shapes, dtypes, scale), for the
/// forms composed of ops (a mask, dropout) to refuse what the fused op refuses, alike.
void check_attention(const Tensor& query, const Tensor& key, const Tensor& value, double scale);

/// Which path attention takes on this CPU, per dtype ("bfloat16" → "fused AVX512_BF16 kernel …",
/// then "float32", then "other dtypes"): what `tally info` prints.
std::vector<std::pair<std::string, std::string>> attention_paths();

}  // namespace tally
