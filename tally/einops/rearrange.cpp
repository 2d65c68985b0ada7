// Running a transform plan with tally ops only: reshape (a view when strides allow), one
// reduction, permute, reshape + expand for repeat's new axes, and a final reshape.

#include "tally/einops/rearrange.h"

#include "tally/einops/pattern.h"
#include "tally/einops/permute_if_needed.h"
#include "tally/einops/transform_plan.h"
#include "tally/ops/reduce.h"

namespace tally::einops {
namespace {

using detail::TransformKind;
using detail::TransformPlan;


// The length of every axis: given, fixed, or inferred from the input dim that holds it.
std::vector<int64_t> resolve_lengths(const TransformPlan& plan, const Tensor& x, const AxisLengths& lengths,
                                     const detail::PatternContext& ctx) {
  std::vector<int64_t> len(plan.axes.size(), -1);
  for (size_t i = 0; i < plan.axes.size(); ++i) {
    const detail::LengthSource& src = plan.axes[i];
    if (src.given >= 0) {
      len[i] = lengths[src.given].second;
      if (len[i] < 0) detail::fail(ctx, "the length of '", plan.axis_names[i], "' must not be negative, got ", len[i]);
    } else if (src.fixed > 0) {
      len[i] = src.fixed;
    }
  }
  for (size_t d = 0; d < plan.input_dims.size(); ++d) {
    const int64_t size = x.size(static_cast<int64_t>(d));
    int64_t known = 1;
    int unknown = -1;
    for (int id : plan.input_dims[d]) {
      if (len[id] < 0) unknown = id;
      else known *= len[id];
    }
    if (unknown >= 0) {
      if (known == 0 ? size != 0 : size % known != 0)
        detail::fail(ctx, "dimension ", d, " of the input (shape ", x.sizes(), ") has size ", size, ", which ",
                     plan.input_text[d], " cannot split: ", size, " is not divisible by ", known);
      len[unknown] = known == 0 ? 0 : size / known;
    } else if (plan.input_dims[d].empty() && size != 1) {
      detail::fail(ctx, "dimension ", d, " of the input (shape ", x.sizes(), ") has size ", size, " but the pattern writes ",
                   plan.input_text[d], ", a unit axis, there");
    } else if (known != size) {
      detail::fail(ctx, "dimension ", d, " of the input (shape ", x.sizes(), ") has size ", size, " but ",
                   plan.input_text[d], " has length ", known);
    }
  }
  return len;
}

Tensor apply_reduction(const Tensor& t, IntArrayRef dims, std::string_view reduction) {
  if (reduction == "sum") return tally::sum(t, dims);
  if (reduction == "mean") return tally::mean(t, dims);
  if (reduction == "max") return tally::amax(t, dims);
  if (reduction == "min") return tally::amin(t, dims);
  if (reduction == "prod") return tally::prod(t, dims);
  if (reduction == "any") return tally::any(t, dims);
  return tally::all(t, dims);
}

Tensor transform(TransformKind kind, const Tensor& x, std::string_view pattern, const AxisLengths& lengths,
                 std::string_view reduction) {
  const auto plan = detail::transform_plan(kind, pattern, x, lengths);
  const detail::PatternContext ctx{detail::kind_name(kind), pattern};
  const std::vector<int64_t> len = resolve_lengths(*plan, x, lengths, ctx);
  Tensor t = x;
  if (plan->decompose) t = t.reshape(IntArrayRef(len.data(), static_cast<size_t>(plan->num_input_axes)));
  if (!plan->reduce_dims.empty()) t = apply_reduction(t, plan->reduce_dims, reduction);
  t = detail::permute_if_needed(t, plan->perm);
  std::vector<int64_t> shape;
  bool has_new = false;
  for (size_t i = 0; i < plan->output_axes.size(); ++i) {
    has_new |= plan->output_axis_is_new[i] != 0;
    shape.push_back(plan->output_axis_is_new[i] ? 1 : len[plan->output_axes[i]]);
  }
  if (has_new) {
    // Size-1 placeholders first (always a view), then a stride-0 expand: no bytes are copied
    // unless the final reshape merges a new axis with an old one.
    t = t.reshape(shape);
    for (size_t i = 0; i < shape.size(); ++i) shape[i] = len[plan->output_axes[i]];
    t = t.expand(shape);
  }
  if (plan->compose) {
    std::vector<int64_t> out;
    for (const std::vector<int>& dim : plan->output_dims) {
      int64_t p = 1;
      for (int id : dim) p *= len[id];
      out.push_back(p);
    }
    t = t.reshape(out);
  }
  return t;
}

}  // namespace

Tensor rearrange(const Tensor& x, std::string_view pattern, const AxisLengths& lengths) {
  return transform(TransformKind::rearrange, x, pattern, lengths, {});
}

Tensor reduce(const Tensor& x, std::string_view pattern, std::string_view reduction, const AxisLengths& lengths) {
  static constexpr std::string_view kReductions[] = {"sum", "mean", "max", "min", "prod", "any", "all"};
  bool known = false;
  for (std::string_view r : kReductions) known |= r == reduction;
  if (!known)
    detail::fail({"reduce", pattern}, "unknown reduction '", reduction,
                 "' (expected sum, mean, max, min, prod, any or all)");
  return transform(TransformKind::reduce, x, pattern, lengths, reduction);
}

Tensor repeat(const Tensor& x, std::string_view pattern, const AxisLengths& lengths) {
  return transform(TransformKind::repeat, x, pattern, lengths, {});
}

}  // namespace tally::einops
