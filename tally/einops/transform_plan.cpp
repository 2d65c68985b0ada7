#include "tally/einops/transform_plan.h"

#include <algorithm>

#include "tally/einops/pattern.h"
#include "tally/einops/plan_cache.h"

namespace tally::einops::detail {
namespace {

constexpr std::string_view kEllipsisName = "...";

std::string dim_text(const Dim& d) {
  if (d.axes.empty()) return d.bracketed ? "()" : "1";
  std::string s = d.bracketed ? "(" : "";
  for (size_t i = 0; i < d.axes.size(); ++i) s += (i ? " " : "") + d.axes[i].name;
  return d.bracketed ? s + ")" : s;
}

class Builder {
 public:
  Builder(TransformKind kind, std::string_view pattern, const Tensor& x, const AxisLengths& lengths)
      : kind_(kind), ctx_{kind_name(kind), pattern}, x_(x), lengths_(lengths) {}

  TransformPlan run() {
    auto [lhs, rhs] = split_arrow(ctx_);
    const Expression left = parse_expression(lhs, ctx_, "the left side");
    const Expression right = parse_expression(rhs, ctx_, "the right side");
    check_lengths(left, right);
    check_ellipsis(left, right);
    build_input(left);
    build_output(right);
    build_reduction_and_perm();
    return std::move(plan_);
  }

 private:
  void check_lengths(const Expression& left, const Expression& right) {
    const auto ln = left.names(), rn = right.names();
    for (size_t i = 0; i < lengths_.size(); ++i) {
      const std::string& name = lengths_[i].first;
      if (std::find(ln.begin(), ln.end(), name) == ln.end() && std::find(rn.begin(), rn.end(), name) == rn.end())
        fail(ctx_, "a length is given for '", name, "', which is not in the pattern");
      for (size_t j = 0; j < i; ++j)
        if (lengths_[j].first == name) fail(ctx_, "the length of '", name, "' is given twice");
    }
  }

  void check_ellipsis(const Expression& left, const Expression& right) {
    if (left.has_ellipsis && left.ellipsis_bracketed)
      fail(ctx_, "'...' inside brackets is only allowed on the right side");
    if (right.has_ellipsis && !left.has_ellipsis) fail(ctx_, "'...' is on the right side but not on the left");
    if (left.has_ellipsis && !right.has_ellipsis && kind_ != TransformKind::reduce)
      fail(ctx_, "'...' is on the left side but not on the right (only reduce can remove dimensions)");
    const int64_t rank = x_.dim();
    if (left.has_ellipsis ? rank < left.fixed_dims() : rank != left.fixed_dims())
      fail(ctx_, "the left side names ", left.fixed_dims(), left.has_ellipsis ? " or more" : "",
           " dimensions but the input has shape ", x_.sizes(), " (", rank, " dimensions)");
    ellipsis_dims_ = left.has_ellipsis ? rank - left.fixed_dims() : 0;
  }

  int given_index(std::string_view name) const {
    for (size_t i = 0; i < lengths_.size(); ++i)
      if (lengths_[i].first == name) return static_cast<int>(i);
    return -1;
  }

  int find_axis(std::string_view name) const {
    for (int64_t i = 0; i < plan_.num_input_axes; ++i)
      if (plan_.axis_names[i] == name) return static_cast<int>(i);
    return -1;
  }

  int add_axis(std::string name, LengthSource source) {
    plan_.axes.push_back(source);
    plan_.axis_names.push_back(std::move(name));
    return static_cast<int>(plan_.axes.size() - 1);
  }

  std::string ellipsis_axis_name(int64_t k) const { return ::tally::detail::str_cat(kEllipsisName, "[", k, "]"); }

  void build_input(const Expression& left) {
    for (const Dim& d : left.dims) {
      if (!d.axes.empty() && d.axes[0].kind == Axis::Kind::ellipsis) {
        for (int64_t k = 0; k < ellipsis_dims_; ++k) {
          plan_.input_dims.push_back({add_axis(ellipsis_axis_name(k), {})});
          plan_.input_text.emplace_back(kEllipsisName);
        }
        continue;
      }
      std::vector<int> ids;
      int inferred = 0;
      for (const Axis& a : d.axes) {
        if (a.kind == Axis::Kind::anonymous && kind_ != TransformKind::reduce)
          fail(ctx_, "anonymous axis '", a.name, "' on the left side: ", kind_name(kind_),
               " only allows the unit axis '1' there (name the axis instead)");
        const LengthSource src = a.kind == Axis::Kind::anonymous ? LengthSource{-1, a.length} : LengthSource{given_index(a.name), 0};
        inferred += src.given < 0 && src.fixed == 0;
        ids.push_back(add_axis(a.name, src));
      }
      if (inferred > 1)
        fail(ctx_, "cannot infer the lengths in ", dim_text(d), ": give the lengths of all but one of its axes");
      plan_.decompose |= ids.size() != 1;
      plan_.input_dims.push_back(std::move(ids));
      plan_.input_text.push_back(dim_text(d));
    }
    plan_.num_input_axes = static_cast<int64_t>(plan_.axes.size());
  }

  void build_output(const Expression& right) {
    for (const Dim& d : right.dims) {
      std::vector<int> ids;
      for (const Axis& a : d.axes) {
        if (a.kind == Axis::Kind::ellipsis) {
          if (!d.bracketed) {
            for (int64_t k = 0; k < ellipsis_dims_; ++k) add_output_dim({find_axis(ellipsis_axis_name(k))});
            continue;
          }
          for (int64_t k = 0; k < ellipsis_dims_; ++k) ids.push_back(find_axis(ellipsis_axis_name(k)));
          continue;
        }
        if (a.kind == Axis::Kind::anonymous) {
          if (kind_ != TransformKind::repeat)
            fail(ctx_, "anonymous axis '", a.name, "' on the right side: ", kind_name(kind_),
                 " only allows the unit axis '1' there");
          ids.push_back(add_axis(a.name, {-1, a.length}));
          continue;
        }
        const int id = find_axis(a.name);
        if (id >= 0) {
          ids.push_back(id);
        } else if (kind_ == TransformKind::repeat) {
          const int given = given_index(a.name);
          if (given < 0) fail(ctx_, "the length of new axis '", a.name, "' is not given (pass {{\"", a.name, "\", n}})");
          ids.push_back(add_axis(a.name, {given, 0}));
        } else {
          fail(ctx_, "'", a.name, "' is on the right side but not on the left");
        }
      }
      if (!(!d.bracketed && !d.axes.empty() && d.axes[0].kind == Axis::Kind::ellipsis)) add_output_dim(std::move(ids));
    }
  }

  void add_output_dim(std::vector<int> ids) {
    plan_.compose |= ids.size() != 1;
    for (int id : ids) {
      plan_.output_axes.push_back(id);
      plan_.output_axis_is_new.push_back(id >= plan_.num_input_axes);
    }
    plan_.output_dims.push_back(std::move(ids));
  }

  void build_reduction_and_perm() {
    std::vector<int> kept;
    for (int id = 0; id < plan_.num_input_axes; ++id) {
      if (std::find(plan_.output_axes.begin(), plan_.output_axes.end(), id) != plan_.output_axes.end()) {
        kept.push_back(id);
      } else if (kind_ == TransformKind::reduce) {
        plan_.reduce_dims.push_back(id);
      } else {
        const std::string& name = plan_.axis_names[id];
        fail(ctx_, "'", name, "' is on the left side but not on the right",
             kind_ == TransformKind::rearrange ? " (use reduce to remove an axis)" : "");
      }
    }
    for (int id : plan_.output_axes)
      if (id < plan_.num_input_axes)
        plan_.perm.push_back(std::find(kept.begin(), kept.end(), id) - kept.begin());
  }

  TransformKind kind_;
  PatternContext ctx_;
  const Tensor& x_;
  const AxisLengths& lengths_;
  int64_t ellipsis_dims_ = 0;
  TransformPlan plan_;
};

}  // namespace

std::string_view kind_name(TransformKind kind) {
  switch (kind) {
    case TransformKind::rearrange: return "rearrange";
    case TransformKind::reduce: return "reduce";
    case TransformKind::repeat: return "repeat";
  }
  return "?";
}

std::shared_ptr<const TransformPlan> transform_plan(TransformKind kind, std::string_view pattern, const Tensor& x,
                                                    const AxisLengths& lengths) {
  static PlanCache<TransformPlan> cache;
  // One buffer per thread: building the key then allocates nothing after the first call.
  thread_local std::string key;
  key.clear();
  key.push_back(static_cast<char>(kind));
  append_key_int(key, x.dim());
  append_key_int(key, static_cast<int64_t>(lengths.size()));
  for (const auto& [name, length] : lengths) {
    append_key_int(key, static_cast<int64_t>(name.size()));
    key.append(name);
  }
  key.append(pattern);
  return cache.get(key, [&] { return Builder(kind, pattern, x, lengths).run(); });
}

}  // namespace tally::einops::detail
