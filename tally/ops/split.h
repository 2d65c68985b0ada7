#pragma once
// Splitting a tensor along one dim into views, as torch.split / chunk / unbind / unflatten: each
// piece is a narrow (or select, or view) of the input, so nothing is copied and each piece's
// gradient flows back to its part of the input.

#include <vector>

#include "tally/core/tensor.h"

namespace tally {

/// Pieces of `split_size` along `dim`, the last one smaller when the size does not divide
/// (torch.split with an int). A split_size of 0 is allowed only on a dim of size 0.
TensorList split(const Tensor& x, int64_t split_size, int64_t dim = 0);
/// Pieces of the given sizes along `dim`, which must sum to its size (torch.split with a list).
TensorList split_with_sizes(const Tensor& x, IntArrayRef split_sizes, int64_t dim = 0);
/// `chunks` pieces of ceil(size / chunks) along `dim`, fewer when the last would be empty
/// (torch.chunk); a dim of size 0 gives `chunks` empty pieces.
TensorList chunk(const Tensor& x, int64_t chunks, int64_t dim = 0);
/// Every slice along `dim`, that dim removed (torch.unbind).
TensorList unbind(const Tensor& x, int64_t dim = 0);
/// `dim` viewed as `sizes` (one may be -1), as Tensor.unflatten.
Tensor unflatten(const Tensor& x, int64_t dim, IntArrayRef sizes);

}  // namespace tally
