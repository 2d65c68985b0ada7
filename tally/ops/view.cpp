// View ops: each is a geometry rule over the same storage. They go through apply() like every
// op (so autograd can attach its rule later); their cost is zero FLOPs and zero bytes.

#include <algorithm>
#include <numeric>

#include "tally/core/geometry.h"
#include "tally/core/object_pool.h"
#include "tally/ops/advanced_index.h"
#include "tally/ops/apply.h"
#include "tally/ops/creation.h"
#include "tally/ops/elementwise.h"
#include "tally/ops/join.h"
#include "tally/ops/reduce.h"

namespace tally {

namespace {

using geometry::Geometry;

Tensor make_view(const Tensor& base, DimVector sizes, DimVector strides, int64_t offset) {
  auto impl = detail::make_pooled<TensorImpl>();
  impl->storage = base.storage();
  impl->sizes = std::move(sizes);
  impl->strides = std::move(strides);
  impl->storage_offset = offset;
  impl->dtype = base.dtype();
  return Tensor(std::move(impl));
}

/// An op that computes a view from (base, args...) with `rule`.
struct ViewCost {
  static constexpr bool supports_cuda = true;  // a view only re-describes the storage, wherever it is
  static constexpr bool forward_on_meta = true;  // ... meta tensors included
  template <class... A>
  static ops::Cost cost(const Tensor&, const A&...) { return {}; }
  // A view's backward places the gradient by shape alone (Note [Version counter]).
  static constexpr bool backward_reads_values = false;
};

struct View : ViewCost {
  static constexpr std::string_view name = "view";
  static Tensor forward(const Tensor& x, IntArrayRef sizes) {
    DimVector shape = geometry::infer_size(sizes, x.numel());
    auto strides = geometry::view_strides(x.sizes(), x.strides(), shape);
    TALLY_CHECK(strides.has_value(),
                "view size is not compatible with input tensor's size and stride (at least one dimension spans across "
                "two contiguous subspaces). Use .reshape(...) instead. (input sizes ",
                x.sizes(), ", strides ", x.strides(), ", requested ", sizes, ")");
    return make_view(x, std::move(shape), std::move(*strides), x.storage_offset());
  }
  static TensorList backward(const ops::BackwardContext& c, const Tensor& x, IntArrayRef) { return {c.grad.reshape(x.sizes())}; }
};

struct AsStrided : ViewCost {
  static constexpr std::string_view name = "as_strided";
  static Tensor forward(const Tensor& x, IntArrayRef sizes, IntArrayRef strides, int64_t offset) {
    TALLY_CHECK(sizes.size() == strides.size(), "as_strided: mismatch in length of strides and shape (", sizes, " vs ",
                strides, ")");
    geometry::check_sizes(sizes, "as_strided");
    TALLY_CHECK(offset >= 0, "as_strided: negative storage offset ", offset);
    int64_t last = offset;
    bool empty = false, overflow = false;
    for (size_t i = 0; i < sizes.size(); ++i) {
      TALLY_CHECK(strides[i] >= 0, "as_strided: Negative strides are not supported at the moment, got strides: ", strides);
      int64_t reach = 0;
      if (sizes[i] == 0) empty = true;
      else overflow |= __builtin_mul_overflow(sizes[i] - 1, strides[i], &reach) || __builtin_add_overflow(last, reach, &last);
    }
    // A wrapped `last` would pass the bound below and view memory far outside the storage.
    TALLY_CHECK(empty || !overflow, "Storage size calculation overflowed with sizes=", sizes, " and strides=", strides);
    const int64_t available = x.storage()->nbytes() / x.element_size();
    TALLY_CHECK(empty || last < available, "setStorage: sizes ", sizes, ", strides ", strides, ", storage offset ",
                offset, " require ", (last + 1) * x.element_size(), " bytes but the storage has only ",
                x.storage()->nbytes(), " bytes");
    return make_view(x, DimVector(sizes), DimVector(strides), offset);
  }
  // Each output element's gradient goes to the storage element it viewed (summed where the view
  // repeats one), and each input element takes the gradient of its storage element: shared
  // equally where the input itself repeats an element (an expanded input), as PyTorch's
  // as_strided_backward. Storage elements the output viewed but the input did not are dropped.
  static TensorList backward(const ops::BackwardContext& c, const Tensor& x, IntArrayRef sizes, IntArrayRef strides, int64_t offset) {
    if (x.numel() == 0 || c.grad.numel() == 0) return {zeros(x.sizes(), c.grad.options())};
    const auto [out_lo, out_hi] = storage_range(sizes, strides, offset);
    const auto [in_lo, in_hi] = storage_range(x.sizes(), x.strides(), x.storage_offset());
    const int64_t lo = std::min(out_lo, in_lo), hi = std::max(out_hi, in_hi);
    const Tensor out_at = storage_positions(sizes, strides, offset - lo, c.grad.device());
    const Tensor in_at = storage_positions(x.sizes(), x.strides(), x.storage_offset() - lo, c.grad.device());
    Tensor storage = index_add(zeros({hi - lo}, c.grad.options()), 0, out_at, c.grad.reshape({-1}));
    if (repeats_elements(x.sizes(), x.strides())) {
      const Tensor uses = index_add(zeros({hi - lo}, c.grad.options()), 0, in_at, ones({x.numel()}, c.grad.options()));
      storage = storage / uses.clamp(1);
    }
    return {index_select(storage, 0, in_at).view(x.sizes())};
  }

 private:
  /// The first and one past the last storage element a non-empty geometry reaches (strides ≥ 0).
  static std::pair<int64_t, int64_t> storage_range(IntArrayRef sizes, IntArrayRef strides, int64_t offset) {
    int64_t last = offset;
    for (size_t d = 0; d < sizes.size(); ++d) last += (sizes[d] - 1) * strides[d];
    return {offset, last + 1};
  }
  /// The storage element of each element of a geometry, row-major, from `offset`.
  static Tensor storage_positions(IntArrayRef sizes, IntArrayRef strides, int64_t offset, Device device) {
    Tensor at = scalar_tensor(offset, TensorOptions(kInt64));
    for (size_t d = 0; d < sizes.size(); ++d) {
      DimVector shape(sizes.size(), 1);
      shape[d] = sizes[d];
      at = at + (arange(sizes[d], TensorOptions(kInt64)) * strides[d]).view(shape);
    }
    return at.reshape({-1}).to(device);
  }
  /// Whether two elements of the geometry share a storage element (PyTorch's maybe-overlapping
  /// test: each stride, smallest first, must pass the extent of the dims below it).
  static bool repeats_elements(IntArrayRef sizes, IntArrayRef strides) {
    std::vector<std::pair<int64_t, int64_t>> dims;  // (stride, size) of the dims of more than one element
    for (size_t d = 0; d < sizes.size(); ++d)
      if (sizes[d] > 1) dims.emplace_back(strides[d], sizes[d]);
    std::sort(dims.begin(), dims.end());
    int64_t extent = 0;  // the span of the dims below, in elements
    for (const auto& [stride, size] : dims) {
      if (stride <= extent) return true;
      extent += (size - 1) * stride;
    }
    return false;
  }
};

struct Permute : ViewCost {
  static constexpr std::string_view name = "permute";
  static Tensor forward(const Tensor& x, IntArrayRef dims) {
    const int64_t nd = x.dim();
    TALLY_CHECK(static_cast<int64_t>(dims.size()) == nd, "permute(sparse_coo): number of dimensions in the tensor input does not "
                "match the length of the desired ordering of dimensions i.e. input.dim() = ", nd, " is not equal to len(dims) = ",
                dims.size());
    DimVector sizes(nd), strides(nd);
    std::vector<bool> seen(nd, false);
    for (int64_t i = 0; i < nd; ++i) {
      int64_t d = maybe_wrap_dim(dims[i], nd, false);
      TALLY_CHECK(!seen[d], "permute(): duplicate dims are not allowed (dims ", dims, ")");
      seen[d] = true;
      sizes[i] = x.sizes()[d];
      strides[i] = x.strides()[d];
    }
    return make_view(x, std::move(sizes), std::move(strides), x.storage_offset());
  }
  // The inverse permutation carries the gradient back.
  static TensorList backward(const ops::BackwardContext& c, const Tensor& x, IntArrayRef dims) {
    DimVector inverse(dims.size());
    for (size_t i = 0; i < dims.size(); ++i) inverse[static_cast<size_t>(maybe_wrap_dim(dims[i], x.dim(), false))] = static_cast<int64_t>(i);
    return {c.grad.permute(inverse)};
  }
};

struct Expand : ViewCost {
  static constexpr std::string_view name = "expand";
  static Tensor forward(const Tensor& x, IntArrayRef sizes) {
    const int64_t nd = static_cast<int64_t>(sizes.size()), xd = x.dim();
    TALLY_CHECK(nd >= xd, "expand(", x.dtype(), "{", x.sizes(), "}, size=", sizes,
                "): the number of sizes provided (", nd, ") must be greater or equal to the number of dimensions in the tensor (",
                xd, ")");
    DimVector out_sizes(nd), out_strides(nd);
    for (int64_t i = nd - 1; i >= 0; --i) {
      const int64_t j = i - (nd - xd);  // matching dim of x, or negative for a new leading dim
      int64_t want = sizes[i];
      if (j < 0) {
        TALLY_CHECK(want >= 0, "expand: the expanded size of the tensor (", want, ") isn't allowed in a leading, non-existing dimension ", i);
        out_sizes[i] = want;
        out_strides[i] = 0;
        continue;
      }
      const int64_t have = x.sizes()[j];
      if (want == -1) want = have;
      TALLY_CHECK(want >= 0, "expand: the expanded size of the tensor (", want, ") at dimension ", i,
                  " must be non-negative, or -1 to keep the existing size (", have, ").  Target sizes: ", sizes);
      TALLY_CHECK(have == want || have == 1, "The expanded size of the tensor (", want,
                  ") must match the existing size (", have, ") at non-singleton dimension ", i,
                  ".  Target sizes: ", sizes, ".  Tensor sizes: ", x.sizes());
      out_sizes[i] = want;
      out_strides[i] = (have == want) ? x.strides()[j] : 0;
    }
    return make_view(x, std::move(out_sizes), std::move(out_strides), x.storage_offset());
  }
  // Every broadcast copy sends its gradient back to the one element it read.
  static TensorList backward(const ops::BackwardContext& c, const Tensor& x, IntArrayRef) { return {sum_to_size(c.grad, x.sizes())}; }
};

struct Slice : ViewCost {
  static constexpr std::string_view name = "slice";
  static Tensor forward(const Tensor& x, int64_t dim, std::optional<int64_t> start, std::optional<int64_t> end, int64_t step) {
    TALLY_CHECK_INDEX(x.dim() > 0, "slice() cannot be applied to a 0-dim tensor.");
    dim = maybe_wrap_dim(dim, x.dim(), false);
    TALLY_CHECK(step > 0, "slice step must be positive (got ", step, ")");
    const int64_t n = x.sizes()[dim];
    int64_t s = start.value_or(0), e = end.value_or(n);
    if (s < 0) s += n;
    if (e < 0) e += n;
    s = std::clamp<int64_t>(s, 0, n);
    e = std::clamp<int64_t>(e, s, n);
    DimVector sizes = DimVector(x.sizes()), strides = DimVector(x.strides());
    // Written so that no step overflows (e − s + step − 1 did, for a step near INT64_MAX); a
    // stride too large for int64 only arises for a dim of one element, where it is never used.
    sizes[dim] = e > s ? (e - s - 1) / step + 1 : 0;
    if (__builtin_mul_overflow(strides[dim], step, &strides[dim])) strides[dim] = x.strides()[dim];
    return make_view(x, std::move(sizes), std::move(strides), x.storage_offset() + s * x.strides()[dim]);
  }
  static TensorList backward(const ops::BackwardContext& c, const Tensor& x, int64_t dim, std::optional<int64_t> start,
                             std::optional<int64_t> end, int64_t step) {
    Tensor g = zeros(x.sizes(), c.grad.options());
    g.slice(dim, start, end, step).copy_(c.grad);
    return {g};
  }
};

struct Select : ViewCost {
  static constexpr std::string_view name = "select";
  static Tensor forward(const Tensor& x, int64_t dim, int64_t index) {
    TALLY_CHECK_INDEX(x.dim() > 0, "select() cannot be applied to a 0-dim tensor.");
    dim = maybe_wrap_dim(dim, x.dim(), false);
    const int64_t n = x.sizes()[dim];
    TALLY_CHECK_INDEX(index >= -n && index < n, "index ", index, " is out of bounds for dimension ", dim, " with size ", n);
    if (index < 0) index += n;
    DimVector sizes = DimVector(x.sizes()), strides = DimVector(x.strides());
    const int64_t offset = x.storage_offset() + index * strides[dim];
    sizes.erase(sizes.begin() + dim);
    strides.erase(strides.begin() + dim);
    return make_view(x, std::move(sizes), std::move(strides), offset);
  }
  static TensorList backward(const ops::BackwardContext& c, const Tensor& x, int64_t dim, int64_t index) {
    Tensor g = zeros(x.sizes(), c.grad.options());
    g.select(dim, index).copy_(c.grad);
    return {g};
  }
};

struct Unsqueeze : ViewCost {
  static constexpr std::string_view name = "unsqueeze";
  static Tensor forward(const Tensor& x, int64_t dim) {
    dim = maybe_wrap_dim(dim, x.dim() + 1, false);
    DimVector sizes = DimVector(x.sizes()), strides = DimVector(x.strides());
    const int64_t stride = dim < x.dim() ? sizes[dim] * strides[dim] : 1;
    sizes.insert(sizes.begin() + dim, 1);
    strides.insert(strides.begin() + dim, stride);
    return make_view(x, std::move(sizes), std::move(strides), x.storage_offset());
  }
  static TensorList backward(const ops::BackwardContext& c, const Tensor& x, int64_t) { return {c.grad.reshape(x.sizes())}; }
};

struct Squeeze : ViewCost {
  static constexpr std::string_view name = "squeeze";
  /// dim < 0 after wrapping is impossible; std::nullopt squeezes every size-1 dim.
  static Tensor forward(const Tensor& x, std::optional<int64_t> dim) {
    DimVector sizes, strides;
    std::optional<int64_t> d;
    if (dim) d = maybe_wrap_dim(*dim, x.dim());
    for (int64_t i = 0; i < x.dim(); ++i) {
      const bool drop = x.sizes()[i] == 1 && (!d || *d == i);
      if (!drop) {
        sizes.push_back(x.sizes()[i]);
        strides.push_back(x.strides()[i]);
      }
    }
    return make_view(x, std::move(sizes), std::move(strides), x.storage_offset());
  }
  static TensorList backward(const ops::BackwardContext& c, const Tensor& x, std::optional<int64_t>) {
    return {c.grad.reshape(x.sizes())};
  }
};

}  // namespace

Tensor Tensor::view(IntArrayRef sizes) const { return ops::apply<View>(*this, sizes); }

Tensor Tensor::reshape(IntArrayRef sizes) const {
  DimVector shape = geometry::infer_size(sizes, numel());
  if (geometry::view_strides(this->sizes(), strides(), shape)) return view(shape);
  return contiguous().view(shape);
}

Tensor Tensor::flatten(int64_t start_dim, int64_t end_dim) const {
  start_dim = maybe_wrap_dim(start_dim, dim());  // a 0-d tensor has dims 0 and -1, as torch's
  end_dim = maybe_wrap_dim(end_dim, dim());
  if (dim() == 0) return reshape({1});
  TALLY_CHECK(start_dim <= end_dim, "flatten() has invalid args: start_dim cannot come after end_dim");
  DimVector shape(sizes().begin(), sizes().begin() + start_dim);
  int64_t merged = 1;
  for (int64_t i = start_dim; i <= end_dim; ++i) merged *= sizes()[i];
  shape.push_back(merged);
  shape.insert(shape.end(), sizes().begin() + end_dim + 1, sizes().end());
  return reshape(shape);
}

Tensor Tensor::as_strided(IntArrayRef sizes, IntArrayRef strides, std::optional<int64_t> storage_offset) const {
  return ops::apply<AsStrided>(*this, sizes, strides, storage_offset.value_or(this->storage_offset()));
}

Tensor Tensor::permute(IntArrayRef dims) const { return ops::apply<Permute>(*this, dims); }

Tensor Tensor::transpose(int64_t dim0, int64_t dim1) const {
  const int64_t nd = dim();
  if (nd == 0) {
    maybe_wrap_dim(dim0, 0);
    maybe_wrap_dim(dim1, 0);
    return permute({});
  }
  dim0 = maybe_wrap_dim(dim0, nd);
  dim1 = maybe_wrap_dim(dim1, nd);
  DimVector order(nd);
  std::iota(order.begin(), order.end(), int64_t{0});
  std::swap(order[dim0], order[dim1]);
  return permute(order);
}

Tensor Tensor::t() const {
  TALLY_CHECK(dim() <= 2, "t() expects a tensor with <= 2 dimensions, but self is ", dim(), "D");
  return dim() < 2 ? transpose(0, 0) : transpose(0, 1);
}

Tensor Tensor::expand(IntArrayRef sizes) const { return ops::apply<Expand>(*this, sizes); }
Tensor Tensor::squeeze() const { return ops::apply<Squeeze>(*this, std::optional<int64_t>{}); }
Tensor Tensor::squeeze(int64_t dim) const { return ops::apply<Squeeze>(*this, std::optional<int64_t>{dim}); }
Tensor Tensor::unsqueeze(int64_t dim) const { return ops::apply<Unsqueeze>(*this, dim); }
Tensor Tensor::select(int64_t dim, int64_t index) const { return ops::apply<Select>(*this, dim, index); }

Tensor Tensor::slice(int64_t dim, std::optional<int64_t> start, std::optional<int64_t> end, int64_t step) const {
  return ops::apply<Slice>(*this, dim, start, end, step);
}

Tensor Tensor::narrow(int64_t dim, int64_t start, int64_t length) const {
  TALLY_CHECK_INDEX(this->dim() > 0, "narrow() cannot be applied to a 0-dim tensor.");
  const int64_t d = maybe_wrap_dim(dim, this->dim());
  const int64_t n = sizes()[d];
  TALLY_CHECK_INDEX(start >= -n && start <= n, "start out of range (expected to be in range of [", -n, ", ", n, "], but got ", start, ")");
  if (start < 0) start += n;
  TALLY_CHECK(length >= 0 && start <= n - length, "start (", start, ") + length (", length, ") exceeds dimension size (", n, ").");
  return slice(d, start, start + length, 1);
}

namespace {

/// The dims of x an index list entry consumes.
int64_t dims_consumed(const indexing::TensorIndex& i) {
  using K = indexing::TensorIndex::Kind;
  if (i.kind() == K::Integer || i.kind() == K::Slice) return 1;
  if (i.kind() == K::Tensor) return is_index_mask(i.tensor()) ? i.tensor().dim() : 1;
  return 0;
}

/// x[position] along dim d of `out`, checked as PyTorch checks it: an index out of range is
/// named by its position in the index list (x[0, 5] on [2, 3]: "dimension 1"; x[..., 5] too),
/// not by the dim of `out`.
Tensor select_checked(const Tensor& out, int64_t d, int64_t i, int64_t position) {
  const int64_t n = out.size(d);
  TALLY_CHECK_INDEX(i >= -n && i < n, "index ", i, " is out of bounds for dimension ", position, " with size ", n);
  return out.select(d, i);
}

/// Reads an index list as PyTorch's applySlicing does: integers, slices, None, Ellipsis, bools
/// and 0-d integer tensors become views of x, in order; the other tensors are collected in
/// `tensors`, entry k starting at the returned view's dim k (undefined entries keep a dim
/// whole). Returns the view.
Tensor apply_basic(const Tensor& x, const std::vector<indexing::TensorIndex>& indices, TensorList& tensors) {
  using K = indexing::TensorIndex::Kind;
  int64_t consumed = 0, ellipses = 0;
  for (const auto& i : indices) {
    consumed += dims_consumed(i);
    if (i.kind() == K::Ellipsis) ++ellipses;
  }
  TALLY_CHECK_INDEX(ellipses <= 1, "an index can only have a single ellipsis ('...')");
  TALLY_CHECK_INDEX(consumed <= x.dim(), "too many indices for tensor of dimension ", x.dim());
  Tensor out = x;
  int64_t d = 0, covered = 0;  // the current dim of `out`; the dims `tensors` reaches so far
  auto add_tensor = [&](Tensor t, int64_t span) {
    for (; covered < d; ++covered) tensors.emplace_back();
    tensors.push_back(std::move(t));
    d += span;
    covered = d;
  };
  int64_t position = 0;
  for (const auto& i : indices) {
    switch (i.kind()) {
      case K::Integer: out = select_checked(out, d, i.integer(), position); break;
      case K::Slice: {
        const auto& s = i.slice();
        out = out.slice(d, s.start, s.stop, s.step.value_or(1));
        ++d;
        break;
      }
      case K::None: out = out.unsqueeze(d); ++d; break;
      case K::Boolean: out = out.unsqueeze(d).slice(d, 0, i.integer(), 1); ++d; break;
      case K::Ellipsis: d += x.dim() - consumed; break;
      case K::Tensor: {
        const Tensor& t = i.tensor();
        TALLY_CHECK_INDEX(t.defined(), "an undefined tensor cannot index (at position ", position, " of the index list)");
        if (t.dim() == 0 && !is_index_mask(t) && !is_floating_point(t.dtype())) {
          out = select_checked(out, d, t.item<int64_t>(), position);  // as an integer, as PyTorch's
        } else if (t.dim() == 0 && is_index_mask(t)) {
          // A 0-d mask adds a dim, as a bool does, whose one row it keeps or drops: a copy.
          out = out.unsqueeze(d);
          add_tensor(t.item<bool>() ? zeros({1}, TensorOptions(kInt64)) : empty({0}, TensorOptions(kInt64)), 1);
        } else {
          add_tensor(t, is_index_mask(t) ? t.dim() : 1);
        }
        break;
      }
    }
    ++position;
  }
  return out;
}

bool any_defined(const TensorList& ts) {
  return std::any_of(ts.begin(), ts.end(), [](const Tensor& t) { return t.defined(); });
}

}  // namespace

Tensor Tensor::index(std::initializer_list<indexing::TensorIndex> indices) const {
  return index(std::vector<indexing::TensorIndex>(indices));
}

Tensor Tensor::index(const std::vector<indexing::TensorIndex>& indices) const {
  TensorList tensors;
  Tensor out = apply_basic(*this, indices, tensors);
  return any_defined(tensors) ? out.index(tensors) : out;
}

Tensor& Tensor::index_put_(const std::vector<indexing::TensorIndex>& indices, const Tensor& values) const {
  TensorList tensors;
  Tensor target = apply_basic(*this, indices, tensors);
  // Leading dims of size 1 in the values are dropped first, as NumPy and PyTorch drop them:
  // x[True] = v.unsqueeze(0).unsqueeze(0) writes x.
  int64_t lead = 0;
  while (lead < values.dim() && values.size(lead) == 1) ++lead;
  const Tensor v = lead == 0 ? values : values.view(values.sizes().slice(static_cast<size_t>(lead), static_cast<size_t>(values.dim() - lead)));
  if (any_defined(tensors)) target.index_put_(tensors, v);
  else target.copy_(v);
  return const_cast<Tensor&>(*this);
}

Tensor& Tensor::index_put_(const std::vector<indexing::TensorIndex>& indices, Scalar value) const {
  TensorList tensors;
  Tensor target = apply_basic(*this, indices, tensors);
  if (any_defined(tensors)) target.index_put_(tensors, full({}, value, target.options()));
  else target.fill_(value);
  return const_cast<Tensor&>(*this);
}

Tensor& Tensor::index_put_(std::initializer_list<indexing::TensorIndex> indices, const Tensor& values) const {
  return index_put_(std::vector<indexing::TensorIndex>(indices), values);
}

Tensor& Tensor::index_put_(std::initializer_list<indexing::TensorIndex> indices, Scalar value) const {
  return index_put_(std::vector<indexing::TensorIndex>(indices), value);
}

namespace indexing {
void check_ellipsis_string(const char* s) {
  TALLY_CHECK_INDEX(s != nullptr && std::string_view(s) == "...", "Expected \"...\" to represent an ellipsis index, but got \"",
                    s ? s : "(null)", "\"");
}
}  // namespace indexing

Tensor Tensor::detach() const {
  return make_view(*this, DimVector(sizes()), DimVector(strides()), storage_offset());
}

void Tensor::set_data(const Tensor& new_data) {
  TALLY_CHECK(defined() && new_data.defined(), "set_data: both tensors must be defined");
  TALLY_CHECK(is_leaf(), "set_data: only a leaf tensor's data can be replaced");
  TensorImpl& self = impl();
  const TensorImpl& src = new_data.impl();
  self.storage = src.storage;
  self.sizes = src.sizes;
  self.strides = src.strides;
  self.storage_offset = src.storage_offset;
  self.dtype = src.dtype;
}

}  // namespace tally
