#pragma once
// Tensors over memory the caller owns (torch::from_blob): no copy is made.

#include <functional>

#include "tally/core/tensor.h"

namespace tally {

/// A tensor over `data` (CPU memory, or device memory with a CUDA device in `options`), laid out
/// with `strides` (row-major when none are given). The bytes must stay valid while the tensor or
/// any view of it lives; a `deleter` is called with `data` when the last one goes. Writes through
/// the tensor land in `data`. The bytes are counted under no memory category: tally did not
/// allocate them. A meta device, a negative size or stride, or a null `data` for a tensor with
/// elements, is an error.
Tensor from_blob(void* data, IntArrayRef sizes, TensorOptions options = {});
Tensor from_blob(void* data, IntArrayRef sizes, IntArrayRef strides, TensorOptions options = {});
Tensor from_blob(void* data, IntArrayRef sizes, std::function<void(void*)> deleter, TensorOptions options = {});
Tensor from_blob(void* data, IntArrayRef sizes, IntArrayRef strides, std::function<void(void*)> deleter, TensorOptions options = {});

}  // namespace tally
