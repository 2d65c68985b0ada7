#pragma once
// What an einsum pattern means for operands of given ranks, worked out once and cached: every
// name becomes a small integer label, and for one or two operands the whole lowering (which dims
// to sum first, how to permute into a batched matmul, how to permute the product into the output)
// is precomputed, so a call only reads sizes and issues ops.

#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "tally/core/tensor.h"

namespace tally::einops::detail {

/// One contraction of two operands, lowered to a batched matmul (batch, left, contracted) x
/// (batch, contracted, right) -> (batch, left, right).
struct PairStep {
  std::vector<int64_t> a_sum, b_sum;    ///< dims summed away first: labels only that operand has and nothing needs
  std::vector<int64_t> a_perm, b_perm;  ///< after those sums, into matmul order
  std::vector<int> batch, left, contracted, right;  ///< labels of each matmul role
  std::vector<int> result;              ///< labels of the product: batch, left, right
};

/// The lowering of a pattern for one list of operand ranks.
struct EinsumPlan {
  std::vector<std::vector<int>> operand_labels;  ///< each operand's dims as labels
  std::vector<int> output_labels;                ///< the output's dims as labels
  std::vector<std::string> label_names;          ///< for messages; "..." dims read "...[k]"
  std::vector<char> is_ellipsis;                 ///< per label: may broadcast from size 1
  std::vector<int64_t> single_sum, single_perm;  ///< one operand: dims to sum, then the permutation
  PairStep pair;                                 ///< two operands: the one contraction
  std::vector<int64_t> pair_perm;                ///< two operands: product dims into output order
};

/// The cached plan for `pattern` applied to `operands` (their shapes only appear in errors).
std::shared_ptr<const EinsumPlan> einsum_plan(std::string_view pattern, const std::vector<Tensor>& operands);

/// Lower the contraction of operands labelled `a` and `b`, keeping the labels flagged in `keep`
/// (needed by the output or another operand); batch and free labels follow `output`'s order.
PairStep plan_pair(const std::vector<int>& a, const std::vector<int>& b, const std::vector<char>& keep,
                   const std::vector<int>& output);

}  // namespace tally::einops::detail
