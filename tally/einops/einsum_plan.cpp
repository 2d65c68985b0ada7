#include "tally/einops/einsum_plan.h"

#include <algorithm>
#include <climits>

#include "tally/einops/pattern.h"
#include "tally/einops/plan_cache.h"

namespace tally::einops::detail {
namespace {

bool contains(const std::vector<int>& v, int label) { return std::find(v.begin(), v.end(), label) != v.end(); }

int64_t index_of(const std::vector<int>& v, int label) {
  return static_cast<int64_t>(std::find(v.begin(), v.end(), label) - v.begin());
}

// The label of `name`, adding it on first sight.
int intern(std::vector<std::string>& names, std::string_view name) {
  for (size_t i = 0; i < names.size(); ++i)
    if (names[i] == name) return static_cast<int>(i);
  names.emplace_back(name);
  return static_cast<int>(names.size() - 1);
}

// einops' einsum takes plain names only: a group or a number has no meaning in a contraction.
void check_names_only(const Expression& e, const PatternContext& ctx, std::string_view side) {
  for (const Dim& d : e.dims) {
    if (d.bracketed) fail(ctx, "brackets are not allowed in einsum (", side, "); rearrange first");
    if (d.axes.empty()) fail(ctx, "unit axes ('1' or '()') are not allowed in einsum (", side, ")");
    if (d.axes[0].kind == Axis::Kind::anonymous)
      fail(ctx, "anonymous axis '", d.axes[0].name, "' in ", side, ": einsum takes names only");
  }
}

EinsumPlan build_plan(std::string_view pattern, const std::vector<Tensor>& operands) {
  const PatternContext ctx{"einsum", pattern};
  TALLY_CHECK(!operands.empty(), "einsum pattern \"", pattern, "\": einsum needs at least one operand, got none");
  auto [lhs, rhs] = split_arrow(ctx);
  const std::vector<std::string_view> pieces = split_commas(lhs);
  if (pieces.size() != operands.size())
    fail(ctx, "the pattern names ", pieces.size(), " operand", pieces.size() == 1 ? "" : "s", " but ", operands.size(),
         " tensor", operands.size() == 1 ? " was" : "s were", " given");

  std::vector<Expression> inputs;
  int64_t max_ellipsis = 0;
  for (size_t k = 0; k < pieces.size(); ++k) {
    const std::string side = ::tally::detail::str_cat("operand ", k, " (\"", trim(pieces[k]), "\")");
    inputs.push_back(parse_expression(pieces[k], ctx, side));
    const Expression& e = inputs.back();
    check_names_only(e, ctx, side);
    const int64_t rank = operands[k].dim();
    if (e.has_ellipsis) {
      if (rank < e.fixed_dims())
        fail(ctx, side, " needs at least ", e.fixed_dims(), " dimensions but the tensor has shape ", operands[k].sizes());
      max_ellipsis = std::max(max_ellipsis, rank - e.fixed_dims());
    } else if (rank != e.fixed_dims()) {
      fail(ctx, side, " names ", e.fixed_dims(), " dimensions but the tensor has shape ", operands[k].sizes(),
           e.fixed_dims() < rank ? " (use '...' for the leading ones)" : "");
    }
  }
  const Expression output = parse_expression(rhs, ctx, "the output");
  check_names_only(output, ctx, "the output");

  EinsumPlan plan;
  for (const Expression& e : inputs)
    for (std::string_view name : e.names()) intern(plan.label_names, name);
  const int named = static_cast<int>(plan.label_names.size());
  plan.is_ellipsis.assign(named, 0);
  for (int64_t k = 0; k < max_ellipsis; ++k) {
    plan.label_names.push_back(::tally::detail::str_cat("...[", k, "]"));
    plan.is_ellipsis.push_back(1);
  }
  // "..." dims align from the right, as broadcasting does: an operand with fewer of them gets
  // the last labels.
  auto expand = [&](const Expression& e, int64_t ellipsis_dims) {
    std::vector<int> labels;
    for (const Dim& d : e.dims) {
      if (d.axes[0].kind == Axis::Kind::ellipsis) {
        for (int64_t k = max_ellipsis - ellipsis_dims; k < max_ellipsis; ++k) labels.push_back(named + static_cast<int>(k));
      } else {
        labels.push_back(intern(plan.label_names, d.axes[0].name));
      }
    }
    return labels;
  };
  for (size_t k = 0; k < inputs.size(); ++k)
    plan.operand_labels.push_back(expand(inputs[k], operands[k].dim() - inputs[k].fixed_dims()));

  const bool any_ellipsis = std::any_of(inputs.begin(), inputs.end(), [](const Expression& e) { return e.has_ellipsis; });
  if (output.has_ellipsis && !any_ellipsis) fail(ctx, "'...' appears in the output but in no operand");
  for (std::string_view name : output.names())
    if (std::find(plan.label_names.begin(), plan.label_names.begin() + named, name) == plan.label_names.begin() + named)
      fail(ctx, "'", name, "' in the output does not appear in any operand");
  plan.output_labels = expand(output, max_ellipsis);

  const std::vector<int>& out = plan.output_labels;
  if (operands.size() == 1) {
    const std::vector<int>& a = plan.operand_labels[0];
    std::vector<int> kept;
    for (size_t i = 0; i < a.size(); ++i) {
      if (contains(out, a[i])) kept.push_back(a[i]);
      else plan.single_sum.push_back(static_cast<int64_t>(i));
    }
    for (int l : out) plan.single_perm.push_back(index_of(kept, l));
  } else if (operands.size() == 2) {
    std::vector<char> keep(plan.label_names.size(), 0);
    for (int l : out) keep[l] = 1;
    plan.pair = plan_pair(plan.operand_labels[0], plan.operand_labels[1], keep, out);
    for (int l : out) plan.pair_perm.push_back(index_of(plan.pair.result, l));
  }
  return plan;
}

}  // namespace

PairStep plan_pair(const std::vector<int>& a, const std::vector<int>& b, const std::vector<char>& keep,
                   const std::vector<int>& output) {
  PairStep s;
  std::vector<int> a_kept, b_kept;
  for (size_t i = 0; i < a.size(); ++i) {
    if (!contains(b, a[i]) && !keep[a[i]]) s.a_sum.push_back(static_cast<int64_t>(i));
    else a_kept.push_back(a[i]);
  }
  for (size_t i = 0; i < b.size(); ++i) {
    if (!contains(a, b[i]) && !keep[b[i]]) s.b_sum.push_back(static_cast<int64_t>(i));
    else b_kept.push_back(b[i]);
  }
  for (int l : a_kept) {
    if (!contains(b_kept, l)) s.left.push_back(l);
    else if (keep[l]) s.batch.push_back(l);
    else s.contracted.push_back(l);
  }
  for (int l : b_kept)
    if (!contains(a_kept, l)) s.right.push_back(l);
  // Output order for batch and free labels makes the final permute an identity in the common
  // cases; labels kept only for a later operand stay in operand order (stable sort).
  auto by_output = [&](std::vector<int>& v) {
    std::stable_sort(v.begin(), v.end(), [&](int x, int y) {
      const int64_t rx = contains(output, x) ? index_of(output, x) : INT_MAX;
      const int64_t ry = contains(output, y) ? index_of(output, y) : INT_MAX;
      return rx < ry;
    });
  };
  by_output(s.batch);
  by_output(s.left);
  by_output(s.right);
  for (const auto* role : {&s.batch, &s.left, &s.contracted})
    for (int l : *role) s.a_perm.push_back(index_of(a_kept, l));
  for (const auto* role : {&s.batch, &s.contracted, &s.right})
    for (int l : *role) s.b_perm.push_back(index_of(b_kept, l));
  s.result = s.batch;
  s.result.insert(s.result.end(), s.left.begin(), s.left.end());
  s.result.insert(s.result.end(), s.right.begin(), s.right.end());
  return s;
}

std::shared_ptr<const EinsumPlan> einsum_plan(std::string_view pattern, const std::vector<Tensor>& operands) {
  static PlanCache<EinsumPlan> cache;
  // One buffer per thread: building the key then allocates nothing after the first call.
  thread_local std::string key;
  key.clear();
  append_key_int(key, static_cast<int64_t>(operands.size()));
  for (const Tensor& t : operands) append_key_int(key, t.dim());
  key.append(pattern);
  return cache.get(key, [&] { return build_plan(pattern, operands); });
}

}  // namespace tally::einops::detail
