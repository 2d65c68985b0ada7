#pragma once
// The einops pattern grammar, parsed into a small tree: a side of a pattern is a list of tensor
// dimensions; each dimension holds one axis, or a bracketed group "(h w)" of axes composed in
// row-major order; an axis is a name, a number (an anonymous axis of that length), or "...".
// A unit dimension is written "()" or "1" and holds no axes, as in einops.

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "tally/error/error.h"

namespace tally::einops::detail {

/// One elementary axis of a pattern.
struct Axis {
  /// What the axis is written as.
  enum class Kind { named, anonymous, ellipsis };
  Kind kind = Kind::named;  ///< name, number or "..."
  std::string name;    ///< the identifier (the digits, for anonymous axes)
  int64_t length = 0;  ///< the number, for anonymous axes
};

/// One dimension of a tensor as a pattern writes it.
struct Dim {
  std::vector<Axis> axes;  ///< composed in row-major order; empty for a unit dimension
  bool bracketed = false;  ///< written "( ... )"
};

/// One side of a pattern (or one einsum operand).
struct Expression {
  std::vector<Dim> dims;             ///< as written, "..." still unexpanded
  bool has_ellipsis = false;         ///< "..." appears somewhere
  bool ellipsis_bracketed = false;  ///< "(...)" or "(a ...)"
  /// Number of dimensions the pattern writes besides an unbracketed "...".
  int64_t fixed_dims() const { return static_cast<int64_t>(dims.size()) - (has_ellipsis && !ellipsis_bracketed ? 1 : 0); }
  /// The names of its named axes in order of appearance.
  std::vector<std::string_view> names() const;
};

/// Where a message about a pattern comes from: the op ("rearrange") and the whole pattern.
struct PatternContext {
  std::string_view op;       ///< "einsum", "rearrange", ...
  std::string_view pattern;  ///< the whole pattern, quoted in every message
};

/// Raise ValueError as `<op> pattern "<pattern>": <problem>`.
template <class... Args>
[[noreturn]] void fail(const PatternContext& ctx, const Args&... problem) {
  throw ValueError(::tally::detail::str_cat(ctx.op, " pattern \"", ctx.pattern, "\": ", problem...));
}

/// Parse `text` (a substring of ctx.pattern, so positions are reported in the whole pattern);
/// `side` names it in messages ("the left side", "operand 1").
Expression parse_expression(std::string_view text, const PatternContext& ctx, std::string_view side);

/// The two sides of "left -> right"; raises unless there is exactly one arrow.
std::pair<std::string_view, std::string_view> split_arrow(const PatternContext& ctx);

/// `text` split at commas (einsum operands); each piece is still a substring of `text`.
std::vector<std::string_view> split_commas(std::string_view text);

/// Whitespace-trimmed text, for quoting a part of a pattern in a message.
std::string_view trim(std::string_view text);

}  // namespace tally::einops::detail
