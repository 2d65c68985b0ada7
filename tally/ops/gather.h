#pragma once
// Gathering and scattering element by element along a dim, by an index of the input's rank:
// torch.gather, torch.scatter and torch.scatter_add. A loss's pick of each row's target logit is
// a gather; its gradient, and a histogram, are a scatter_add.

#include "tally/core/scalar.h"
#include "tally/core/tensor.h"

namespace tally {

/// out has index's shape; along dim 0 of a 3-D x, out[i][j][k] = x[index[i][j][k]][j][k] (the
/// index replaces the coordinate of `dim`). index is int64, of x's rank, and no larger than x in
/// any other dim; each value lies in [0, x.size(dim)).
Tensor gather(const Tensor& x, int64_t dim, const Tensor& index);

/// A copy of x with src's elements written where index points: along dim 0,
/// out[index[i][j]][j] = src[i][j] for the positions (i, j) of index, which is no larger than src
/// in any dim and than x outside `dim`. Where index repeats a position, the last write in index
/// order stays (torch leaves which one unspecified).
Tensor scatter(const Tensor& x, int64_t dim, const Tensor& index, const Tensor& src);
/// As scatter, writing `value` at every position index names.
Tensor scatter(const Tensor& x, int64_t dim, const Tensor& index, Scalar value);
/// As scatter, adding src's elements instead of writing them: repeated positions accumulate, in
/// index order on the CPU.
Tensor scatter_add(const Tensor& x, int64_t dim, const Tensor& index, const Tensor& src);

}  // namespace tally
