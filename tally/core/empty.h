#pragma once
// Uninitialised tensors: the one factory the core and the layers beside ops (io reading a file)
// need, and the one every other factory (ops/creation.h) starts from.

#include "tally/core/tensor.h"
#include "tally/core/tensor_options.h"

namespace tally {

/// An uninitialised tensor; its pages are not touched until written.
Tensor empty(IntArrayRef sizes, TensorOptions options = {});
/// An uninitialised tensor with explicit strides (torch.empty_strided).
Tensor empty_strided(IntArrayRef sizes, IntArrayRef strides, TensorOptions options = {});
namespace detail {
/// empty_strided() counted as activations from the start: an op's output a graph node will keep
/// (Note [Activations] in core/storage.h), which saves moving its bytes between categories.
Tensor empty_activation(IntArrayRef sizes, IntArrayRef strides, TensorOptions options);
}  // namespace detail

}  // namespace tally
