#pragma once
// The view rules: pure functions over sizes and strides (in elements). Every view op in
// tally/ops/view.cpp is one of these plus a new TensorImpl over the same storage.

#include <cstdint>
#include <optional>
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
/// Strides that let `new_sizes` view memory laid out as (sizes, strides), or nullopt when no
/// such strides exist (PyTorch's computeStride).
std::optional<DimVector> view_strides(IntArrayRef sizes, IntArrayRef strides, IntArrayRef new_sizes);
/// Broadcast two shapes (numpy rules); raises ValueError naming both shapes.
DimVector broadcast_shapes(IntArrayRef a, IntArrayRef b);
/// Raise if several elements of a tensor with this geometry share one memory location (an
/// expanded view): writing to it in place would be ill-defined.
void check_no_internal_overlap(IntArrayRef sizes, IntArrayRef strides);
/// Check that every size is non-negative; `op` names the caller in the message.
void check_sizes(IntArrayRef sizes, const char* op);

}  // namespace tally::geometry
