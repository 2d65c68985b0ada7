#pragma once
// Ordering along a dim: sort, argsort, topk; and drawing indices from categorical distributions,
// multinomial. They are what sampling from a language model needs (temperature, top-k, top-p).

#include <cstdint>
#include <optional>
#include <tuple>

#include "tally/core/generator.h"
#include "tally/core/tensor.h"

namespace tally {

/// (values, indices) of x sorted along `dim`, ascending unless `descending`. NaN counts as larger
/// than every number (last ascending, first descending), as in PyTorch. The sort is always
/// stable: equal elements keep their order, which is what torch guarantees with stable=true.
std::tuple<Tensor, Tensor> sort(const Tensor& x, int64_t dim = -1, bool descending = false);
/// libtorch's overload with `stable`: tally's sort is stable either way.
std::tuple<Tensor, Tensor> sort(const Tensor& x, std::optional<bool> stable, int64_t dim = -1, bool descending = false);
/// The indices of sort(x, dim, descending), int64.
Tensor argsort(const Tensor& x, int64_t dim = -1, bool descending = false);
/// libtorch's overload with `stable`.
Tensor argsort(const Tensor& x, bool stable, int64_t dim = -1, bool descending = false);

/// (values, indices) of the k largest (or, with !largest, smallest) elements along `dim`, in
/// order from the most extreme; NaN counts as the largest. `sorted` = false lets PyTorch return
/// them in any order; tally returns them sorted either way. Equal elements are taken in index
/// order. As in torch, bool is refused.
std::tuple<Tensor, Tensor> topk(const Tensor& x, int64_t k, int64_t dim = -1, bool largest = true, bool sorted = true);

/// Draws `num_samples` category indices from each row of `probs` ([n] or [rows, n], non-negative
/// weights that need not sum to 1): int64 of shape [num_samples] or [rows, num_samples]. With
/// `replacement` each draw is independent; without, each row's draws are distinct, each drawn in
/// proportion to the weights of the categories left (categories of weight 0 come last, in index
/// order, when there are more draws than categories of positive weight, as in PyTorch). The same
/// generator state gives the same draws, whatever the thread count.
Tensor multinomial(const Tensor& probs, int64_t num_samples, bool replacement = false, Generator* gen = nullptr);

}  // namespace tally
