#pragma once
// The view rules: pure functions over sizes and strides (in elements). Every view op in
// tally/ops/view.cpp is one of these plus a new TensorImpl over the same storage.

#include <cstdint>
#include <optional>
#include <span>
#include <vector>

#include "tally/core/int_array_ref.h"

namespace tally::geometry {

/// Sizes and strides of a view, plus its storage offset.
struct Geometry {
  DimVector sizes;
  DimVector strides;
  int64_t storage_offset = 0;
};

/// Product of sizes; raises ValueError on int64 overflow.
int64_t numel(IntArrayRef sizes);
/// Row-major strides for `sizes`.
DimVector contiguous_strides(IntArrayRef sizes);
/// PyTorch's contiguity rule: size-1 dims may have any stride; empty tensors are contiguous.
bool is_contiguous(IntArrayRef sizes, IntArrayRef strides);
/// Replace a single -1 in `shape` by what makes numel match; raises with PyTorch's message.
DimVector infer_size(IntArrayRef shape, int64_t numel);
/// `sizes` with every dim before the last `kept` folded into one: ({2, 3, 4}, 1) is {6, 4} and
/// ({4}, 1) is {1, 4}. This is reshape({-1, n}) also for a tensor of no elements, where -1 cannot
/// be inferred (a product of width 0, a batch of 0 rows).
DimVector fold_leading_dims(IntArrayRef sizes, int64_t kept);
/// Strides that let `new_sizes` view memory laid out as (sizes, strides), or nullopt when no
/// such strides exist (PyTorch's computeStride).
std::optional<DimVector> view_strides(IntArrayRef sizes, IntArrayRef strides, IntArrayRef new_sizes);
/// Broadcast two shapes (numpy rules); raises ValueError naming both shapes.
DimVector broadcast_shapes(IntArrayRef a, IntArrayRef b);
/// Raise if several elements of a tensor with this geometry share one memory location (an
/// expanded view): writing to it in place would be ill-defined.
void check_no_internal_overlap(IntArrayRef sizes, IntArrayRef strides);
/// PyTorch's is_non_overlapping_and_dense: the elements fill a block of memory exactly, in some
/// order of the dims (a permuted contiguous tensor, not a sliced or expanded one).
bool is_non_overlapping_and_dense(IntArrayRef sizes, IntArrayRef strides);

/// One input of an elementwise op: its sizes and strides (in elements), before broadcasting.
struct StridedShape {
  IntArrayRef sizes;
  IntArrayRef strides;
};

/// Note [Output layout]
/// The strides a new output of an elementwise op gets (`sizes`, the broadcast shape), as
/// PyTorch's TensorIterator gives them: the dims ordered as the inputs store them, and the output
/// dense in that order. So x.t() + y.t() is transposed itself (strides (1, n)), read and written
/// in one pass, where a contiguous result would be a transpose; the inputs, in argument order,
/// decide each pair of dims, the first that stores them in different strides winning (a
/// broadcast dim, stride 0, decides nothing; equal strides put the smaller size inside). Inputs of
/// the output's shape that share one dense layout give it theirs exactly. Row-major strides when
/// nothing else is decided (contiguous inputs, the common case, are answered first). With one
/// input this is also PyTorch's preserve_format, the layout of clone() and the *_like factories
/// (core/memory_format.h).
DimVector elementwise_output_strides(IntArrayRef sizes, std::span<const StridedShape> inputs);
/// Check that every size is non-negative; `op` names the caller in the message.
void check_sizes(IntArrayRef sizes, const char* op);

}  // namespace tally::geometry
