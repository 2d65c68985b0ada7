#pragma once
// einops.einsum: "batch seq1 hidden, batch seq2 hidden -> batch seq1 seq2". Names are words
// separated by spaces, "..." stands for any number of broadcast dimensions, and names missing
// from the output are summed. A dimension of size 1 broadcasts against the same name's size in
// another operand, named or under "...", as in torch.einsum (which einops.einsum calls). Each contraction of two operands is permutes and reshapes (views
// whenever the strides allow) around one batched tally::matmul, so it runs at matmul speed and the
// ledger records matmul FLOPs; three or more operands are contracted pairwise, cheapest pair first.

#include <string_view>
#include <vector>

#include "tally/core/tensor.h"

namespace tally::einops {

/// Contract `operands` as `pattern` says ("a b, b c -> a c").
Tensor einsum(const std::vector<Tensor>& operands, std::string_view pattern);
/// One operand: sums and transposes ("b s h -> b h").
Tensor einsum(const Tensor& a, std::string_view pattern);
/// Two operands ("b s h, b t h -> b s t").
Tensor einsum(const Tensor& a, const Tensor& b, std::string_view pattern);
/// Three operands, contracted pairwise in the cheapest order found greedily.
Tensor einsum(const Tensor& a, const Tensor& b, const Tensor& c, std::string_view pattern);

}  // namespace tally::einops
