#pragma once
// MemoryFormat: the layout a copy is made in, as libtorch's c10::MemoryFormat. `Preserve` (the
// default of clone() and the *_like factories) keeps the source's layout: its strides exactly
// when it is dense, else its dims' order, dense (Note [Output layout] in core/geometry.h).
// `Contiguous` is row-major. PyTorch's ChannelsLast formats are not offered: tally has no
// channels-last kernels to choose them for.

#include <optional>

#include "tally/core/int_array_ref.h"
#include "tally/core/small_vector.h"

namespace tally {

enum class MemoryFormat { Contiguous, Preserve };

/// The strides a copy of a tensor of `sizes` and `strides` gets in `format` (nullopt: Preserve).
DimVector strides_in_format(std::optional<MemoryFormat> format, IntArrayRef sizes, IntArrayRef strides);

}  // namespace tally
