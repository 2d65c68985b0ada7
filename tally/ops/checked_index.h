#pragma once
// The bounds check every op that reads an index tensor makes before it touches memory:
// index_select, index_add (embedding's lookup and its gradient), gather and scatter.

#include <cstdint>

#include "tally/core/tensor.h"

namespace tally::ops {

/// The indices as contiguous int64 on the host, flattened, each checked to lie in [0, n) for a
/// dim of size n (the message from `what`): the bounds are checked here, with the values, on
/// either device (a GPU index is copied over to be read). A negative index is out of range, as in
/// PyTorch's index ops, which do not count from the end as x[-1] does.
Tensor checked_index(const Tensor& index, int64_t n, const char* what, int64_t dim);

}  // namespace tally::ops
