#pragma once
// The plan shared by rearrange, reduce and repeat, worked out once per (op, pattern, input rank,
// names of the given lengths) and cached. Every elementary axis gets an id: the input's axes in
// order, then the axes only repeat adds. A call resolves the lengths, then runs at most
// reshape → reduce → permute → reshape/expand → reshape, skipping every step that is an identity.

#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "tally/core/tensor.h"
#include "tally/einops/rearrange.h"

namespace tally::einops::detail {

/// Which of the three operations a plan serves (they differ in which axes may appear where).
enum class TransformKind { rearrange, reduce, repeat };

/// Where an axis's length comes from at call time.
struct LengthSource {
  int given = -1;     ///< index into the call's AxisLengths, or -1
  int64_t fixed = 0;  ///< an anonymous axis's number, or 0
};

/// The lowering of one pattern for one input rank.
struct TransformPlan {
  std::vector<LengthSource> axes;               ///< every elementary axis; lengths neither given nor fixed are inferred
  std::vector<std::string> axis_names;          ///< for messages
  std::vector<std::vector<int>> input_dims;     ///< each input dim's axes, row-major
  std::vector<std::string> input_text;          ///< each input dim as the pattern writes it, for messages
  int64_t num_input_axes = 0;                   ///< axes 0..num_input_axes-1 are the input's
  bool decompose = false;                       ///< some input dim is not exactly one axis
  std::vector<int64_t> reduce_dims;             ///< reduce: positions among the input axes
  std::vector<int64_t> perm;                    ///< kept input axes into output order
  std::vector<int> output_axes;                 ///< the output's axes, row-major, including new ones
  std::vector<char> output_axis_is_new;         ///< per output axis: added by repeat
  std::vector<std::vector<int>> output_dims;    ///< each output dim's axes
  bool compose = false;                         ///< some output dim is not exactly one axis
};

/// The cached plan for `pattern` applied by `kind` to `x` with lengths named as in `lengths`.
std::shared_ptr<const TransformPlan> transform_plan(TransformKind kind, std::string_view pattern, const Tensor& x,
                                                    const AxisLengths& lengths);

/// The op name of a kind as messages spell it.
std::string_view kind_name(TransformKind kind);

}  // namespace tally::einops::detail
