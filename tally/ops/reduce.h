#pragma once
// Reductions over dims, with keepdim, as in PyTorch.

#include <optional>
#include <tuple>

#include "tally/core/tensor.h"

namespace tally {

/// Sum of all elements (int64 for integer and bool inputs).
Tensor sum(const Tensor& x, std::optional<Dtype> dtype = std::nullopt);
/// Sum over `dims` (all dims when empty).
Tensor sum(const Tensor& x, IntArrayRef dims, bool keepdim = false, std::optional<Dtype> dtype = std::nullopt);
/// Mean over `dims` (all when empty); floating inputs only, as in PyTorch.
Tensor mean(const Tensor& x, IntArrayRef dims = {}, bool keepdim = false);
/// Product over `dims` (all when empty).
Tensor prod(const Tensor& x, IntArrayRef dims = {}, bool keepdim = false);
/// Largest value over `dims` (all when empty); NaN propagates.
Tensor amax(const Tensor& x, IntArrayRef dims = {}, bool keepdim = false);
/// Smallest value over `dims` (all when empty); NaN propagates.
Tensor amin(const Tensor& x, IntArrayRef dims = {}, bool keepdim = false);
/// Index of the largest value along `dim` (of the flattened tensor when absent); first on ties.
Tensor argmax(const Tensor& x, std::optional<int64_t> dim = std::nullopt, bool keepdim = false);
/// Index of the smallest value along `dim`.
Tensor argmin(const Tensor& x, std::optional<int64_t> dim = std::nullopt, bool keepdim = false);
/// (values, indices) of the maximum along `dim` (torch.max(x, dim)).
std::tuple<Tensor, Tensor> max(const Tensor& x, int64_t dim, bool keepdim = false);
/// (values, indices) of the minimum along `dim`.
std::tuple<Tensor, Tensor> min(const Tensor& x, int64_t dim, bool keepdim = false);
/// Whether any element is nonzero, over `dims` (all when empty).
Tensor any(const Tensor& x, IntArrayRef dims = {}, bool keepdim = false);
/// Whether every element is nonzero, over `dims` (all when empty).
Tensor all(const Tensor& x, IntArrayRef dims = {}, bool keepdim = false);
/// Sum `x` down to `sizes` over the dims it was broadcast along (Tensor.sum_to_size): how a
/// gradient returns to an operand that was broadcast.
Tensor sum_to_size(const Tensor& x, IntArrayRef sizes);
/// Variance over `dims` (all when empty) with Bessel's `correction` (1 = unbiased).
Tensor var(const Tensor& x, IntArrayRef dims = {}, int64_t correction = 1, bool keepdim = false);
/// Standard deviation: sqrt(var(x, dims, correction, keepdim)).
Tensor std(const Tensor& x, IntArrayRef dims = {}, int64_t correction = 1, bool keepdim = false);
/// log Σ exp(x) over `dims` (all when empty), shifted by the max for range (torch.logsumexp): a
/// slice of all −inf gives −inf, one holding +inf gives +inf. Integers are promoted to float32.
Tensor logsumexp(const Tensor& x, IntArrayRef dims = {}, bool keepdim = false);

}  // namespace tally
