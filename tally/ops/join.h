#pragma once
// Joining and gathering: cat, stack, index_select (the embedding lookup), embedding.

#include "tally/core/tensor.h"

namespace tally {

/// Concatenate along an existing `dim`; shapes must match elsewhere.
Tensor cat(const TensorList& tensors, int64_t dim = 0);
/// Stack along a new `dim`; shapes must all match.
Tensor stack(const TensorList& tensors, int64_t dim = 0);
/// The entries of x at `index` (1-D int32/int64) along `dim`.
Tensor index_select(const Tensor& x, int64_t dim, const Tensor& index);
/// A copy of x with source's slices added at `index` along `dim` (repeats accumulate).
Tensor index_add(const Tensor& x, int64_t dim, const Tensor& index, const Tensor& source);
/// Rows of `weight` for each id in `indices` (any shape): out[..., :] = weight[indices[...], :].
Tensor embedding(const Tensor& weight, const Tensor& indices);

}  // namespace tally
