#pragma once
// Indexing with tensors, NumPy's "advanced indexing" as PyTorch does it: x[idx], x[:, mask],
// x[i, j] = v. The index tensors broadcast together; a mask stands for the positions of its
// nonzeros; where the indexed dims go in the result follows PyTorch's adjacency rule. The
// index-list spelling (x.index({Slice(), mask})) is Tensor::index, which reads the basic entries
// as views first and hands the tensors to index() below.

#include "tally/core/tensor.h"

namespace tally {

/// Whether a tensor index is a mask over as many dims as it has (bool; uint8 too, which PyTorch
/// still takes, with a deprecation warning) rather than positions along one dim.
inline bool is_index_mask(const Tensor& t) { return t.dtype() == kBool || t.dtype() == kUInt8; }

/// x indexed by one entry per leading dim (ATen's index.Tensor): an int64 tensor of positions
/// along that dim (a negative one counts from the end), a bool or uint8 mask over as many dims as
/// it has (its nonzeros' coordinates, nonzero()), or an undefined tensor, which keeps the dim
/// whole. The position tensors broadcast together to a shape B. When the indexed dims are
/// adjacent, B takes their place in the result: x [5, 6, 7] indexed by [2, 3] on dims 1 and 2 is
/// [5, 2, 3]. Otherwise B comes first: on dims 0 and 2 it is [2, 3, 6]. Always a copy.
Tensor index(const Tensor& x, const TensorList& indices);

/// A copy of x with `values` (broadcast to what index(x, indices) would return, of x's dtype)
/// written at the indexed positions; with `accumulate`, added there, repeats adding up in index
/// order. Without it, where a position repeats the last write in index order stays (PyTorch leaves
/// which one open).
Tensor index_put(const Tensor& x, const TensorList& indices, const Tensor& values, bool accumulate = false);

/// The coordinates of x's nonzero elements (NaN counts, −0 does not), row-major: int64 of shape
/// [count, x.dim()].
Tensor nonzero(const Tensor& x);

/// The elements of x where the bool `mask` is true, x and mask broadcast together, row-major: 1-D.
Tensor masked_select(const Tensor& x, const Tensor& mask);

/// A copy of x (broadcast with the bool mask) with the mask's true positions filled, row-major,
/// from the first elements of `source`, which must have at least as many.
Tensor masked_scatter(const Tensor& x, const Tensor& mask, const Tensor& source);

/// x's elements at positions of x flattened (row-major, negative from the end): index's shape.
Tensor take(const Tensor& x, const Tensor& index);

}  // namespace tally
