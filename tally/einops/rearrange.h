#pragma once
// einops' rearrange, reduce and repeat. One grammar for all three: "b s (h d) -> b h s d" with
// names, "(a b)" groups composed row-major, "..." for any number of dimensions, "()" or "1" for a
// unit dimension, and numbers for anonymous axes. Lengths that cannot be read off the input are
// given as {{"h", 8}}; each group may leave one length to be inferred.
//
// Every result is built from tally views (reshape, permute, unsqueeze, expand) and one reduction,
// so it is a view whenever the strides allow (reshape copies only when they do not) and it is
// differentiable because those ops are.

#include <cstdint>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "tally/core/tensor.h"

namespace tally::einops {

/// Axis lengths a pattern cannot infer, e.g. {{"heads", 2}}.
using AxisLengths = std::vector<std::pair<std::string, int64_t>>;

/// Transpose, split and merge dimensions: rearrange(x, "b s (h d) -> b h s d", {{"h", 8}}).
Tensor rearrange(const Tensor& x, std::string_view pattern, const AxisLengths& lengths = {});

/// Reduce the axes missing on the right with "sum", "mean", "max", "min", "prod", "any" or "all":
/// reduce(x, "b (h 2) (w 2) c -> b h w c", "max") is 2×2 max pooling.
Tensor reduce(const Tensor& x, std::string_view pattern, std::string_view reduction, const AxisLengths& lengths = {});

/// Add (or tile) axes present only on the right, as a stride-0 expand when they stay separate
/// dimensions: repeat(x, "h w -> h w c", {{"c", 3}}).
Tensor repeat(const Tensor& x, std::string_view pattern, const AxisLengths& lengths = {});

}  // namespace tally::einops
