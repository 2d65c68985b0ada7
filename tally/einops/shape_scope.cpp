#include "tally/einops/shape_scope.h"

#include "tally/einops/pattern.h"
#include "tally/einops/plan_cache.h"

namespace tally::einops {
namespace {

/// A parsed spec: one entry per written dimension.
struct ShapeSpec {
  struct Entry {
    std::string name;   // empty for a fixed size or "..."
    int64_t fixed = 0;  // a number's value
    bool ellipsis = false;
  };
  std::vector<Entry> entries;
  int64_t fixed_dims = 0;  // entries besides "..."
  bool has_ellipsis = false;
};

ShapeSpec parse_spec(std::string_view spec) {
  const detail::PatternContext ctx{"shape", spec};
  const detail::Expression e = detail::parse_expression(spec, ctx, "the shape");
  ShapeSpec out;
  for (const detail::Dim& d : e.dims) {
    if (d.bracketed) detail::fail(ctx, "brackets are not allowed in a shape");
    if (d.axes.empty()) {  // "1": a dimension of size 1
      out.entries.push_back({"", 1, false});
      continue;
    }
    const detail::Axis& a = d.axes[0];
    if (a.kind == detail::Axis::Kind::ellipsis) out.entries.push_back({"", 0, true});
    else if (a.kind == detail::Axis::Kind::anonymous) out.entries.push_back({"", a.length, false});
    else out.entries.push_back({a.name, 0, false});
  }
  out.has_ellipsis = e.has_ellipsis;
  out.fixed_dims = e.fixed_dims();
  return out;
}

std::shared_ptr<const ShapeSpec> cached_spec(std::string_view spec) {
  static detail::PlanCache<ShapeSpec> cache;
  thread_local std::string key;  // reused: a check allocates nothing once its spec is cached
  key.assign(spec);
  return cache.get(key, [&] { return parse_spec(spec); });
}

}  // namespace

const Tensor& ShapeScope::check(const Tensor& x, std::string_view spec_text, std::string_view tensor_name) {
  const auto spec = cached_spec(spec_text);
  ++checks_;
  // Built only when a message or a new binding needs it: the common path allocates nothing.
  const int64_t number = checks_;
  auto who = [&] { return tensor_name.empty() ? ::tally::detail::str_cat("#", number) : std::string(tensor_name); };
  const detail::PatternContext ctx{"shape", spec_text};
  const int64_t rank = x.dim();
  if (spec->has_ellipsis ? rank < spec->fixed_dims : rank != spec->fixed_dims)
    detail::fail(ctx, "tensor ", who(), " has shape ", x.sizes(), " (", rank, " dimensions) but the shape names ", spec->fixed_dims,
                 spec->has_ellipsis ? " or more" : "");
  int64_t dim = 0;
  for (const ShapeSpec::Entry& e : spec->entries) {
    if (e.ellipsis) {
      dim += rank - spec->fixed_dims;
      continue;
    }
    const int64_t s = x.size(dim);
    if (e.name.empty()) {
      if (s != e.fixed)
        detail::fail(ctx, "dimension ", dim, " of tensor ", who(), " (shape ", x.sizes(), ") is ", s, " but must be ", e.fixed);
    } else {
      Binding* found = nullptr;
      for (Binding& b : bindings_)
        if (b.name == e.name) found = &b;
      if (!found) {
        bindings_.push_back({e.name, s, who()});
      } else if (found->size != s) {
        detail::fail(ctx, "dimension '", e.name, "' is ", s, " for tensor ", who(), " but was bound to ", found->size,
                     " by tensor ", found->source, " (", who(), " has shape ", x.sizes(), ")");
      }
    }
    ++dim;
  }
  return x;
}

std::optional<int64_t> ShapeScope::size(std::string_view name) const {
  for (const Binding& b : bindings_)
    if (b.name == name) return b.size;
  return std::nullopt;
}

void ShapeScope::bind(std::string_view name, int64_t size, std::string_view source) {
  for (const Binding& b : bindings_)
    if (b.name == name) {
      TALLY_CHECK(b.size == size, "shape: dimension '", name, "' is ", size, " for ", source, " but was bound to ", b.size,
                  " by tensor ", b.source);
      return;
    }
  bindings_.push_back({std::string(name), size, std::string(source)});
}

}  // namespace tally::einops
