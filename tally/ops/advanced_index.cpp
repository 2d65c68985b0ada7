// Advanced indexing. index gathers through one offset per position of the broadcast index
// shape; index_put is its reverse and its gradient. nonzero, masked_select, masked_scatter and
// take are made of them. Cost: data movement, and one add per element index_put accumulates;
// what is read is what the indices reach (and the index tensors), not the whole tensor they
// reach into.

#include "tally/ops/advanced_index.h"

#include <cstring>
#include <string>
#include <utility>
#include <vector>

#include "tally/kernels/cpu/parallel.h"
#include "tally/ops/apply.h"
#include "tally/ops/creation.h"
#include "tally/ops/reduce.h"

namespace tally {

namespace {

/// "[2], [3]": the shapes of the defined tensors, as PyTorch lists them in its messages.
std::string shapes_of(const TensorList& ts) {
  std::string s;
  for (const Tensor& t : ts) {
    if (!t.defined()) continue;
    if (!s.empty()) s += ", ";
    s += ::tally::detail::str_cat(t.sizes());
  }
  return s;
}

/// The indices with each mask replaced by its nonzeros' coordinates, one int64 tensor per dim
/// it covers (ATen's expandTensors). Reads the masks' values, so it runs before apply.
TensorList expand_masks(const Tensor& x, const TensorList& indices) {
  TensorList out;
  int64_t d = 0;  // the dim of x the next entry indexes
  for (const Tensor& t : indices) {
    if (!t.defined() || !is_index_mask(t)) {
      out.push_back(t);
      ++d;
      continue;
    }
    TALLY_CHECK_INDEX(t.dim() > 0, "a 0-d mask is an index only in an index list (x.index({mask})), where it adds a dim of size 1 or 0");
    for (int64_t j = 0; j < t.dim(); ++j) {
      TALLY_CHECK_INDEX(d + j < x.dim(), "too many indices for tensor of dimension ", x.dim(), " (got ", d + t.dim(), ")");
      TALLY_CHECK_INDEX(t.size(j) == x.size(d + j), "The shape of the mask ", t.sizes(), " at index ", j,
                        " does not match the shape of the indexed tensor ", x.sizes(), " at index ", d + j);
    }
    const Tensor coords = nonzero(t);
    for (int64_t j = 0; j < t.dim(); ++j) out.push_back(coords.select(1, j));
    d += t.dim();
  }
  return out;
}

/// Where an index list sends x's elements: the indexed dims, the shape B the position tensors
/// broadcast to, and the result's shape with B placed by the adjacency rule.
struct IndexPlan {
  std::vector<int64_t> dims;  // x's indexed dims, ascending
  DimVector broadcast;        // B
  int64_t b_first = 0;        // the result's dim where B begins
  DimVector result;
};

IndexPlan plan_index(const Tensor& x, const TensorList& indices) {
  TALLY_CHECK_INDEX(static_cast<int64_t>(indices.size()) <= x.dim(), "too many indices for tensor of dimension ", x.dim(), " (got ",
                    indices.size(), ")");
  IndexPlan p;
  bool first = true;
  for (size_t d = 0; d < indices.size(); ++d) {
    const Tensor& t = indices[d];
    if (!t.defined()) continue;
    TALLY_CHECK_INDEX(t.dtype() == kInt64, "tensors used as indices must be long, byte or bool tensors");
    p.dims.push_back(static_cast<int64_t>(d));
    if (first) {
      p.broadcast = DimVector(t.sizes());
      first = false;
      continue;
    }
    try {
      p.broadcast = geometry::broadcast_shapes(p.broadcast, t.sizes());
    } catch (const ValueError&) {
      throw IndexError(::tally::detail::str_cat("shape mismatch: indexing tensors could not be broadcast together with shapes ",
                                                shapes_of(indices)));
    }
  }
  if (p.dims.empty()) {  // nothing indexed: the whole tensor, copied
    p.result = DimVector(x.sizes());
    return p;
  }
  const bool adjacent = p.dims.back() - p.dims.front() + 1 == static_cast<int64_t>(p.dims.size());
  p.b_first = adjacent ? p.dims.front() : 0;
  for (int64_t d = 0; d < x.dim(); ++d) {
    if (d == p.b_first && adjacent) p.result.insert(p.result.end(), p.broadcast.begin(), p.broadcast.end());
    const bool indexed = d < static_cast<int64_t>(indices.size()) && indices[static_cast<size_t>(d)].defined();
    if (!indexed) p.result.push_back(x.size(d));
  }
  if (!adjacent) p.result.insert(p.result.begin(), p.broadcast.begin(), p.broadcast.end());
  return p;
}

int64_t numel_of(IntArrayRef sizes) {
  int64_t n = 1;
  for (int64_t s : sizes) n *= s;
  return n;
}

/// The walk both index and index_put make: per position b of B, the offset it reaches in the
/// indexed tensor (strides `xs`) and its offset in a tensor of the result's shape (strides
/// `rs`); then, within each, the dims nothing indexes, which both tensors keep.
class IndexWalk {
 public:
  IndexWalk(const IndexPlan& p, const Tensor& x, const TensorList& indices, IntArrayRef xs, IntArrayRef rs) {
    const int64_t nb = numel_of(p.broadcast);
    x_base_.assign(static_cast<size_t>(nb), 0);
    r_base_.assign(static_cast<size_t>(nb), 0);
    for (int64_t d : p.dims) {
      const int64_t n = x.size(d);
      // The positions in B's row-major order, checked, counted from the end where negative.
      const Tensor pos = indices[static_cast<size_t>(d)].to(kCPU).expand(p.broadcast).contiguous();
      const int64_t* v = pos.data_ptr<int64_t>();
      for (int64_t b = 0; b < nb; ++b) {
        TALLY_CHECK_INDEX(v[b] >= -n && v[b] < n, "index ", v[b], " is out of bounds for dimension ", d, " with size ", n);
        x_base_[static_cast<size_t>(b)] += (v[b] < 0 ? v[b] + n : v[b]) * xs[static_cast<size_t>(d)];
      }
    }
    // B's coordinates in the result tensor: its dims b_first.. b_first + |B|.
    const int64_t nbd = static_cast<int64_t>(p.broadcast.size());
    std::vector<int64_t> coord(static_cast<size_t>(nbd), 0);
    for (int64_t b = 0; b < nb; ++b) {
      int64_t off = 0;
      for (int64_t k = 0; k < nbd; ++k) off += coord[static_cast<size_t>(k)] * rs[static_cast<size_t>(p.b_first + k)];
      r_base_[static_cast<size_t>(b)] = off;
      for (int64_t k = nbd - 1; k >= 0; --k) {
        if (++coord[static_cast<size_t>(k)] < p.broadcast[static_cast<size_t>(k)]) break;
        coord[static_cast<size_t>(k)] = 0;
      }
    }
    // The dims nothing indexes, in x's order, and where each sits in the result.
    int64_t r = 0;
    std::vector<bool> indexed(static_cast<size_t>(x.dim()), false);
    for (int64_t d : p.dims) indexed[static_cast<size_t>(d)] = true;
    for (int64_t d = 0; d < x.dim(); ++d) {
      if (r == p.b_first && nbd > 0) r += nbd;
      if (indexed[static_cast<size_t>(d)]) continue;
      rest_.push_back({x.size(d), xs[static_cast<size_t>(d)], rs[static_cast<size_t>(r)]});
      ++r;
    }
  }

  int64_t positions() const { return static_cast<int64_t>(x_base_.size()); }

  /// run(x_offset, r_offset, count, x_step, r_step) for each run of `count` elements along the
  /// innermost kept dim, over positions [begin, end) of B.
  template <class Run>
  void each_run(int64_t begin, int64_t end, Run run) const {
    const size_t nr = rest_.size();
    const Dim inner = nr ? rest_.back() : Dim{1, 0, 0};
    const size_t outer_dims = nr ? nr - 1 : 0;
    int64_t runs = 1;
    for (size_t k = 0; k < outer_dims; ++k) runs *= rest_[k].size;
    if (inner.size == 0 || runs == 0) return;
    std::vector<int64_t> coord(outer_dims, 0);
    for (int64_t b = begin; b < end; ++b) {
      std::fill(coord.begin(), coord.end(), 0);
      int64_t xo = x_base_[static_cast<size_t>(b)], ro = r_base_[static_cast<size_t>(b)];
      for (int64_t i = 0; i < runs; ++i) {
        run(xo, ro, inner.size, inner.x_stride, inner.r_stride);
        for (size_t k = outer_dims; k-- > 0;) {
          xo += rest_[k].x_stride;
          ro += rest_[k].r_stride;
          if (++coord[k] < rest_[k].size) break;
          xo -= rest_[k].x_stride * rest_[k].size;
          ro -= rest_[k].r_stride * rest_[k].size;
          coord[k] = 0;
        }
      }
    }
  }

 private:
  struct Dim {
    int64_t size, x_stride, r_stride;
  };
  std::vector<int64_t> x_base_, r_base_;
  std::vector<Dim> rest_;
};

/// Copies `count` elements of `bytes` each from src (step ss) to dst (step ds), steps in elements.
void copy_run(char* dst, int64_t ds, const char* src, int64_t ss, int64_t count, size_t bytes) {
  if (ds == 1 && ss == 1) {
    std::memcpy(dst, src, static_cast<size_t>(count) * bytes);
    return;
  }
  for (int64_t i = 0; i < count; ++i) std::memcpy(dst + i * ds * static_cast<int64_t>(bytes), src + i * ss * static_cast<int64_t>(bytes), bytes);
}

struct Index {
  static constexpr std::string_view name = "index";
  static constexpr bool supports_cuda = false;  // no GPU kernel yet: refused with the device named
  static ops::OutputSpec meta(const Tensor& x, const TensorList& indices) { return {plan_index(x, indices).result, x.dtype()}; }
  static void compute(const Tensor& out, const Tensor& x, const TensorList& indices) {
    const IndexPlan p = plan_index(x, indices);
    const IndexWalk walk(p, x, indices, x.strides(), out.strides());
    const size_t bytes = static_cast<size_t>(x.element_size());
    const char* src = static_cast<const char*>(x.data_ptr());
    char* dst = static_cast<char*>(out.data_ptr());
    const int64_t per_position = std::max<int64_t>(1, out.numel() / std::max<int64_t>(1, walk.positions()));
    kernels::parallel_for(walk.positions(), std::max<int64_t>(1, kernels::kElementwiseGrain / per_position), [&](int64_t b, int64_t e) {
      walk.each_run(b, e, [&](int64_t xo, int64_t ro, int64_t n, int64_t xs, int64_t rs) {
        copy_run(dst + ro * static_cast<int64_t>(bytes), rs, src + xo * static_cast<int64_t>(bytes), xs, n, bytes);
      });
    });
  }
  static ops::Cost cost(const Tensor& out, const Tensor&, const TensorList& indices) {
    ops::Cost c{0, out.nbytes(), out.nbytes()};
    for (const Tensor& t : indices) c.bytes_read += ops::bytes_held(t);
    return c;
  }
  // Each picked element's gradient goes back where it was picked from, repeats adding up: the
  // indices are read, x only for its shape.
  static ops::SavedTensors saved(const SmallVector<bool, 4>& needs) {
    SmallVector<bool, 4> keep(needs.size(), true);
    keep[0] = false;
    return {std::move(keep), false};
  }
  static TensorList backward(const ops::BackwardContext& c, const Tensor& x, const TensorList& indices) {
    TensorList grads(1 + indices.size());
    grads[0] = index_put(zeros(x.sizes(), c.grad.options()), indices, c.grad, /*accumulate=*/true);
    return grads;
  }
};

struct IndexPut {
  static constexpr std::string_view name = "index_put";
  static constexpr bool supports_cuda = false;
  static constexpr bool writes_over_self = true;  // compute only updates out when out is x
  static ops::OutputSpec meta(const Tensor& x, const TensorList& indices, const Tensor& values, bool) {
    const IndexPlan p = plan_index(x, indices);
    TALLY_CHECK(values.dtype() == x.dtype(), "Index put requires the source and destination dtypes match, got ", dtype_name(x.dtype()),
                " for the destination and ", dtype_name(values.dtype()), " for the source.");
    bool fits = values.dim() <= static_cast<int64_t>(p.result.size());
    for (int64_t k = 1; fits && k <= values.dim(); ++k) {
      const int64_t v = values.size(-k), r = p.result[p.result.size() - static_cast<size_t>(k)];
      fits = v == r || v == 1;
    }
    TALLY_CHECK(fits, "shape mismatch: value tensor of shape ", values.sizes(), " cannot be broadcast to indexing result of shape ",
                IntArrayRef(p.result));
    return {DimVector(x.sizes()), x.dtype()};
  }
  static void compute(const Tensor& out, const Tensor& x, const TensorList& indices, const Tensor& values, bool accumulate) {
    if (!out.is_same(x)) Tensor(out).copy_(x);
    const IndexPlan p = plan_index(x, indices);
    const Tensor v = values.expand(p.result);
    const IndexWalk walk(p, out, indices, out.strides(), v.strides());
    if (!accumulate) {  // in index order, so the last write of a repeated position stays
      const size_t bytes = static_cast<size_t>(out.element_size());
      char* dst = static_cast<char*>(out.data_ptr());
      const char* src = static_cast<const char*>(v.data_ptr());
      walk.each_run(0, walk.positions(), [&](int64_t xo, int64_t ro, int64_t n, int64_t xs, int64_t rs) {
        copy_run(dst + xo * static_cast<int64_t>(bytes), xs, src + ro * static_cast<int64_t>(bytes), rs, n, bytes);
      });
      return;
    }
    // Each sum rounded once, in index order, as index_add's.
    dispatch_arith(out.dtype(), name, [&]<class T>() {
      using C = compute_t<T>;
      T* o = static_cast<T*>(out.data_ptr());
      const T* s = static_cast<const T*>(v.data_ptr());
      walk.each_run(0, walk.positions(), [&](int64_t xo, int64_t ro, int64_t n, int64_t xs, int64_t rs) {
        for (int64_t i = 0; i < n; ++i) o[xo + i * xs] = cast_to<T>(static_cast<C>(o[xo + i * xs]) + static_cast<C>(s[ro + i * rs]));
      });
    });
  }
  static ops::Cost cost(const Tensor& out, const Tensor& x, const TensorList& indices, const Tensor& values, bool accumulate) {
    const int64_t put = numel_of(plan_index(x, indices).result), bytes = put * x.element_size();
    const bool in_place = out.is_same(x);
    ops::Cost c{accumulate ? put : 0, (in_place ? 0 : ops::bytes_held(x)) + ops::bytes_held(values) + (accumulate ? bytes : 0),
                in_place ? bytes : out.nbytes()};
    for (const Tensor& t : indices) c.bytes_read += ops::bytes_held(t);
    return c;
  }
  // x's gradient passes where nothing was written over it (everywhere, accumulating); the
  // values' is the output's gradient at the positions, summed over what values was broadcast along.
  static ops::SavedTensors saved(const SmallVector<bool, 4>& needs) {
    SmallVector<bool, 4> keep(needs.size(), true);
    keep.front() = false;
    keep.back() = false;
    return {std::move(keep), false};
  }
  static TensorList backward(const ops::BackwardContext& c, const Tensor&, const TensorList& indices, const Tensor& values,
                             bool accumulate) {
    TensorList grads(2 + indices.size());
    if (c.needs_grad(0)) grads.front() = accumulate ? c.grad : index_put(c.grad, indices, zeros({}, c.grad.options()));
    if (c.needs_grad(grads.size() - 1)) grads.back() = sum_to_size(index(c.grad, indices), values.sizes()).to(values.dtype());
    return grads;
  }
};

struct Nonzero {
  static constexpr std::string_view name = "nonzero";
  static constexpr bool supports_cuda = false;
  // Its shape depends on the values: no meta step (the meta device refuses it, naming it).
  static Tensor forward(const Tensor& x) {
    const Tensor flags = x.to(kBool).contiguous();  // bool(x): NaN true, −0 false
    const bool* f = flags.data_ptr<bool>();
    int64_t count = 0;
    for (int64_t i = 0; i < flags.numel(); ++i) count += f[i];
    Tensor out = empty({count, x.dim()}, TensorOptions(kInt64));
    int64_t* o = out.data_ptr<int64_t>();
    std::vector<int64_t> coord(static_cast<size_t>(x.dim()), 0);
    for (int64_t i = 0; i < flags.numel(); ++i) {
      if (f[i]) o = std::copy(coord.begin(), coord.end(), o);
      for (int64_t d = x.dim() - 1; d >= 0; --d) {
        if (++coord[static_cast<size_t>(d)] < x.size(d)) break;
        coord[static_cast<size_t>(d)] = 0;
      }
    }
    return out;
  }
  static ops::Cost cost(const Tensor& out, const Tensor& x) { return {0, ops::bytes_held(x), out.nbytes()}; }
};

/// PyTorch's check that a mask is bool (`op` names the caller).
void check_bool_mask(const Tensor& mask, const char* op) {
  TALLY_CHECK_TYPE_ERROR(mask.dtype() == kBool, op, ": expected BoolTensor for mask, but got ", dtype_name(mask.dtype()));
}

struct MaskedSelect {
  static constexpr std::string_view name = "masked_select";
  static constexpr bool supports_cuda = false;
  static Tensor forward(const Tensor& x, const Tensor& mask) {
    check_bool_mask(mask, "masked_select");
    const DimVector shape = geometry::broadcast_shapes(x.sizes(), mask.sizes());
    if (shape.empty()) return index(x.reshape({1}), {mask.reshape({1})});  // a 0-d pair: 0 or 1 element
    return index(x.expand(shape), {mask.expand(shape)});
  }
  static ops::Cost cost(const Tensor& out, const Tensor& x, const Tensor& mask) {
    return {0, ops::bytes_held(x) + ops::bytes_held(mask), out.nbytes()};
  }
  static ops::SavedTensors saved(const SmallVector<bool, 4>&) { return {{false, true}, false}; }
  static TensorList backward(const ops::BackwardContext& c, const Tensor& x, const Tensor& mask) {
    return {sum_to_size(masked_scatter(zeros(x.sizes(), c.grad.options()), mask, c.grad), x.sizes()), Tensor()};
  }
};

/// Writes the first elements of `source`, in row-major order, where the bool mask `m` (of
/// target's shape) is true: masked_scatter's work, out of place and in place. 0-d tensors are
/// written as 1-element views, which index_put_ takes.
void fill_masked(Tensor target, Tensor m, const Tensor& source) {
  TALLY_CHECK_TYPE_ERROR(source.dtype() == target.dtype(), "masked_scatter: expected self and source to have same dtypes but got ",
                         dtype_name(target.dtype()), " and ", dtype_name(source.dtype()));
  const int64_t ones = m.sum().item<int64_t>();
  TALLY_CHECK(source.numel() >= ones, "Number of elements of source < number of ones in mask: ", source.numel(), " < ", ones);
  if (target.dim() == 0) {
    target = target.view({1});
    m = m.view({1});
  }
  target.index_put_(TensorList{m}, source.reshape({-1}).slice(0, 0, ones));
}

struct MaskedScatter {
  static constexpr std::string_view name = "masked_scatter";
  static constexpr bool supports_cuda = false;
  static Tensor forward(const Tensor& x, const Tensor& mask, const Tensor& source) {
    check_bool_mask(mask, "masked_scatter_");  // torch names the in-place op it runs
    const DimVector shape = geometry::broadcast_shapes(x.sizes(), mask.sizes());
    Tensor out = x.expand(shape).clone(MemoryFormat::Contiguous);
    fill_masked(out, mask.expand(shape), source);
    return out;
  }
  static ops::Cost cost(const Tensor& out, const Tensor& x, const Tensor& mask, const Tensor& source) {
    return {0, ops::bytes_held(x) + ops::bytes_held(mask) + ops::bytes_held(source), out.nbytes()};
  }
  static ops::SavedTensors saved(const SmallVector<bool, 4>&) { return {{false, true, false}, false}; }
  static TensorList backward(const ops::BackwardContext& c, const Tensor& x, const Tensor& mask, const Tensor& source) {
    TensorList grads(3);
    const DimVector shape = geometry::broadcast_shapes(x.sizes(), mask.sizes());
    const Tensor m = mask.expand(shape);
    if (c.needs_grad(0)) grads[0] = sum_to_size(c.grad.masked_fill(m, 0), x.sizes());
    if (c.needs_grad(2)) {
      const Tensor picked = masked_select(c.grad, m);
      Tensor g = zeros({source.numel()}, c.grad.options());
      g.slice(0, 0, picked.numel()).copy_(picked);
      grads[2] = g.view(source.sizes()).to(source.dtype());
    }
    return grads;
  }
};

struct Take {
  static constexpr std::string_view name = "take";
  static constexpr bool supports_cuda = false;
  static Tensor forward(const Tensor& x, const Tensor& index) {
    TALLY_CHECK_TYPE_ERROR(index.dtype() == kInt64, "take(): Expected a long tensor for index, but got ", dtype_name(index.dtype()));
    const int64_t n = x.numel();
    const Tensor flat = index.contiguous();
    const int64_t* v = flat.data_ptr<int64_t>();
    for (int64_t i = 0; i < flat.numel(); ++i)
      TALLY_CHECK_INDEX(v[i] >= -n && v[i] < n, "out of range: tried to access index ", v[i], " on a tensor of ", n, " elements.");
    return tally::index(x.reshape({-1}), {index});
  }
  static ops::Cost cost(const Tensor& out, const Tensor&, const Tensor& index) { return {0, out.nbytes() + ops::bytes_held(index), out.nbytes()}; }
  static ops::SavedTensors saved(const SmallVector<bool, 4>&) { return {{false, true}, false}; }
  static TensorList backward(const ops::BackwardContext& c, const Tensor& x, const Tensor& index) {
    const Tensor flat = index_put(zeros({x.numel()}, c.grad.options()), {index}, c.grad, /*accumulate=*/true);
    return {flat.view(x.sizes()), Tensor()};
  }
};

}  // namespace

Tensor index(const Tensor& x, const TensorList& indices) { return ops::apply<Index>(x, expand_masks(x, indices)); }
Tensor index_put(const Tensor& x, const TensorList& indices, const Tensor& values, bool accumulate) {
  return ops::apply<IndexPut>(x, expand_masks(x, indices), values, accumulate);
}
Tensor nonzero(const Tensor& x) { return ops::apply<Nonzero>(x); }
Tensor masked_select(const Tensor& x, const Tensor& mask) { return ops::apply<MaskedSelect>(x, mask); }
Tensor masked_scatter(const Tensor& x, const Tensor& mask, const Tensor& source) { return ops::apply<MaskedScatter>(x, mask, source); }
Tensor take(const Tensor& x, const Tensor& index) { return ops::apply<Take>(x, index); }

Tensor Tensor::index(const TensorList& indices) const { return tally::index(*this, indices); }
Tensor Tensor::index_put(const TensorList& indices, const Tensor& values, bool accumulate) const {
  return tally::index_put(*this, indices, values, accumulate);
}
Tensor& Tensor::index_put_(const TensorList& indices, const Tensor& values, bool accumulate) const {
  return ops::apply_inplace<IndexPut>(*this, expand_masks(*this, indices), values, accumulate);
}
Tensor Tensor::nonzero() const { return tally::nonzero(*this); }
Tensor Tensor::take(const Tensor& index) const { return tally::take(*this, index); }
Tensor Tensor::masked_select(const Tensor& mask) const { return tally::masked_select(*this, mask); }
Tensor Tensor::masked_scatter(const Tensor& mask, const Tensor& source) const { return tally::masked_scatter(*this, mask, source); }
Tensor& Tensor::masked_scatter_(const Tensor& mask, const Tensor& source) const {
  check_bool_mask(mask, "masked_scatter_");
  // In place the mask broadcasts to x, never x to the mask, as PyTorch's.
  const DimVector shape = geometry::broadcast_shapes(sizes(), mask.sizes());
  TALLY_CHECK(IntArrayRef(shape) == sizes(), "masked_scatter_: the mask of shape ", mask.sizes(), " does not broadcast to self's shape ",
              sizes());
  fill_masked(*this, mask.expand(sizes()), source);
  return const_cast<Tensor&>(*this);
}

}  // namespace tally
