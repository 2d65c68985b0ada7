// gather / scatter / scatter_add: each element of the index names a coordinate along `dim`, the
// index's own position gives the others. Cost: data movement (and one add per index element for
// scatter_add); what is read is what the index reaches, not the whole tensor it reaches into.

#include "tally/ops/gather.h"

#include <cstring>
#include <vector>

#include "tally/ops/apply.h"
#include "tally/ops/checked_index.h"
#include "tally/ops/creation.h"

namespace tally {

namespace {

/// A tensor's rank as gather and scatter count it: a 0-d tensor is one of size 1 (as PyTorch's).
int64_t rank_of(const Tensor& t) { return t.dim() == 0 ? 1 : t.dim(); }
int64_t size_of(const Tensor& t, int64_t d) { return t.dim() == 0 ? 1 : t.size(d); }
int64_t stride_of(const Tensor& t, int64_t d) { return t.dim() == 0 ? 0 : t.stride(d); }

void check_index_dtype(const Tensor& index, const char* op) {
  TALLY_CHECK_TYPE_ERROR(index.dtype() == kInt64, op, "(): Expected dtype int64 for index, but got ", dtype_name(index.dtype()));
}

/// body(a, b) for each element of `index` in row-major order, its value read from `ids` (the
/// values flattened): a is the element offset it reaches in a tensor of strides `indexed`, whose
/// coordinate along `dim` is the value, b the offset of its own position in one of strides `plain`.
template <class Body>
void each_position(const Tensor& index, const int64_t* ids, int64_t dim, const std::vector<int64_t>& indexed,
                   const std::vector<int64_t>& plain, Body body) {
  const int64_t n = index.numel(), nd = rank_of(index);
  std::vector<int64_t> coord(static_cast<size_t>(nd), 0);
  for (int64_t i = 0; i < n; ++i) {
    int64_t a = 0, b = 0;
    for (int64_t d = 0; d < nd; ++d) {
      const size_t u = static_cast<size_t>(d);
      a += (d == dim ? ids[i] : coord[u]) * indexed[u];
      b += coord[u] * plain[u];
    }
    body(a, b);
    for (int64_t d = nd - 1; d >= 0; --d) {
      if (++coord[static_cast<size_t>(d)] < size_of(index, d)) break;
      coord[static_cast<size_t>(d)] = 0;
    }
  }
}

std::vector<int64_t> strides_of(const Tensor& t) {
  std::vector<int64_t> s(static_cast<size_t>(rank_of(t)));
  for (int64_t d = 0; d < rank_of(t); ++d) s[static_cast<size_t>(d)] = stride_of(t, d);
  return s;
}

/// The gradient of scatter's src: the output's gradient where each src element went, zero on the
/// part of src the index does not reach (src may be larger than the index; PyTorch's rule
/// returns the index's shape there and its engine rejects it).
Tensor src_grad(const Tensor& grad, int64_t dim, const Tensor& index, const Tensor& src) {
  Tensor picked = gather(grad, dim, index).to(src.dtype());
  if (picked.sizes() == src.sizes()) return picked;
  Tensor full = zeros(src.sizes(), picked.options());
  Tensor part = full;
  for (int64_t d = 0; d < picked.dim(); ++d) part = part.narrow(d, 0, picked.size(d));
  part.copy_(picked);
  return full;
}

struct Gather {
  static constexpr std::string_view name = "gather";
  static constexpr bool supports_cuda = false;  // no GPU kernel yet: refused with the device named
  static ops::OutputSpec meta(const Tensor& x, int64_t dim, const Tensor& index) {
    check_index_dtype(index, "gather");
    dim = maybe_wrap_dim(dim, x.dim());
    if (index.numel() == 0) return {DimVector(index.sizes()), x.dtype()};  // torch checks no shape then
    TALLY_CHECK(rank_of(index) == rank_of(x), "Index tensor must have the same number of dimensions as input tensor: index of shape ",
                index.sizes(), ", input of shape ", x.sizes());
    for (int64_t d = 0; d < rank_of(x); ++d) {
      TALLY_CHECK(d == dim || size_of(index, d) <= size_of(x, d), "Size does not match at dimension ", d, " expected index ",
                  index.sizes(), " to be smaller than self ", x.sizes(), " apart from dimension ", dim);
    }
    return {DimVector(index.sizes()), x.dtype()};
  }
  static void compute(const Tensor& out, const Tensor& x, int64_t dim, const Tensor& index) {
    dim = maybe_wrap_dim(dim, x.dim());
    const Tensor ids = ops::checked_index(index, size_of(x, dim), "index ", dim);
    const size_t bytes = static_cast<size_t>(x.element_size());
    const char* src = static_cast<const char*>(x.data_ptr());
    char* dst = static_cast<char*>(out.data_ptr());
    each_position(index, ids.data_ptr<int64_t>(), dim, strides_of(x), strides_of(out),
                  [&](int64_t a, int64_t b) { std::memcpy(dst + b * bytes, src + a * bytes, bytes); });
  }
  static ops::Cost cost(const Tensor& out, const Tensor& x, int64_t, const Tensor& index) {
    return {0, out.nbytes() + index.nbytes(), out.nbytes()};
  }
  // Each picked element's gradient goes back to where it was picked from (repeats add up): the
  // index is read, x only for its shape.
  static ops::SavedTensors saved(const SmallVector<bool, 4>&) { return {{false, true}, false}; }
  static TensorList backward(const ops::BackwardContext& c, const Tensor& x, int64_t dim, const Tensor& index) {
    return {scatter_add(zeros(x.sizes(), c.grad.options()), dim, index, c.grad), Tensor()};
  }
};

/// What scatter and scatter_add check, as PyTorch's scatter_gather_dtype_check and shape check.
void check_scatter(const Tensor& x, int64_t dim, const Tensor& index, const Tensor* src, const char* op) {
  check_index_dtype(index, op);
  if (src) {
    TALLY_CHECK_TYPE_ERROR(src->dtype() == x.dtype(), "scatter(): Expected self.dtype to be equal to src.dtype, got ", dtype_name(x.dtype()),
                           " and ", dtype_name(src->dtype()));
  }
  dim = maybe_wrap_dim(dim, x.dim());
  if (index.numel() == 0) return;  // nothing is written, and torch checks no shape then
  TALLY_CHECK(rank_of(index) == rank_of(x), "Index tensor must have the same number of dimensions as self tensor: index of shape ",
              index.sizes(), ", self of shape ", x.sizes());
  if (src) {
    TALLY_CHECK(rank_of(index) == rank_of(*src), "Index tensor must have the same number of dimensions as src tensor: index of shape ",
                index.sizes(), ", src of shape ", src->sizes());
  }
  for (int64_t d = 0; d < rank_of(x); ++d) {
    const bool fits = (d == dim || size_of(index, d) <= size_of(x, d)) && (!src || size_of(index, d) <= size_of(*src, d));
    if (src) {
      TALLY_CHECK(fits, "Expected index ", index.sizes(), " to be smaller than self ", x.sizes(), " apart from dimension ", dim,
                  " and to be smaller size than src ", src->sizes());
    } else {
      TALLY_CHECK(fits, "Expected index ", index.sizes(), " to be smaller than self ", x.sizes(), " apart from dimension ", dim);
    }
  }
}

/// Writes (or, with `add`, adds) the source's elements into `out` at the index's positions. The
/// source is `src`'s data with strides `ss` over the index's coordinates: a tensor's own, or
/// zeros for one value written everywhere.
void scatter_into(const Tensor& out, int64_t dim, const Tensor& index, const void* src, const std::vector<int64_t>& ss, bool add,
                  std::string_view name) {
  dim = maybe_wrap_dim(dim, out.dim());
  const Tensor checked = ops::checked_index(index, size_of(out, dim), "index ", dim);
  const int64_t* ids = checked.data_ptr<int64_t>();
  const std::vector<int64_t> so = strides_of(out);
  if (!add) {
    const size_t bytes = static_cast<size_t>(out.element_size());
    const char* s = static_cast<const char*>(src);
    char* o = static_cast<char*>(out.data_ptr());
    each_position(index, ids, dim, so, ss, [&](int64_t a, int64_t b) { std::memcpy(o + a * bytes, s + b * bytes, bytes); });
    return;
  }
  // In index order, each sum rounded once like add_'s (index_add's rule).
  dispatch_arith(out.dtype(), name, [&]<class T>() {
    using C = compute_t<T>;
    T* o = static_cast<T*>(out.data_ptr());
    const T* s = static_cast<const T*>(src);
    each_position(index, ids, dim, so, ss, [&](int64_t a, int64_t b) { o[a] = cast_to<T>(static_cast<C>(o[a]) + static_cast<C>(s[b])); });
  });
}

template <bool Add>
struct Scatter {
  static constexpr std::string_view name = Add ? "scatter_add" : "scatter";
  static constexpr bool supports_cuda = false;
  static constexpr bool writes_over_self = true;  // compute only scatters into out when out is x
  static ops::OutputSpec meta(const Tensor& x, int64_t dim, const Tensor& index, const Tensor& src) {
    check_scatter(x, dim, index, &src, Add ? "scatter_add" : "scatter");
    return {DimVector(x.sizes()), x.dtype()};
  }
  static void compute(const Tensor& out, const Tensor& x, int64_t dim, const Tensor& index, const Tensor& src) {
    if (!out.is_same(x)) Tensor(out).copy_(x);
    scatter_into(out, dim, index, src.data_ptr(), strides_of(src), Add, name);
  }
  static ops::Cost cost(const Tensor& out, const Tensor& x, int64_t, const Tensor& index, const Tensor& src) {
    return {Add ? index.numel() : 0, ops::bytes_held(x) + index.nbytes() + index.numel() * src.element_size(), out.nbytes()};
  }
  // scatter_add passes self's gradient through; scatter zeroes it where src was written. src's is
  // the gradient gathered at the index. Only the index is read.
  static ops::SavedTensors saved(const SmallVector<bool, 4>&) { return {{false, true, false}, false}; }
  static TensorList backward(const ops::BackwardContext& c, const Tensor&, int64_t dim, const Tensor& index, const Tensor& src) {
    TensorList grads(3);
    if (c.needs_grad(0)) grads[0] = Add ? c.grad : scatter(c.grad, dim, index, Scalar(0));
    if (c.needs_grad(2)) grads[2] = src_grad(c.grad, dim, index, src);
    return grads;
  }
};

struct ScatterValue {
  static constexpr std::string_view name = "scatter";
  static constexpr bool supports_cuda = false;
  static constexpr bool writes_over_self = true;
  static ops::OutputSpec meta(const Tensor& x, int64_t dim, const Tensor& index, Scalar value) {
    check_scatter(x, dim, index, nullptr, "scatter");
    check_scalar_fits(value, x.dtype(), "scatter");
    return {DimVector(x.sizes()), x.dtype()};
  }
  static void compute(const Tensor& out, const Tensor& x, int64_t dim, const Tensor& index, Scalar value) {
    if (!out.is_same(x)) Tensor(out).copy_(x);
    // One element holding the value in out's dtype, read at every position (strides of zero).
    const Tensor v = full({}, value, out.options());
    scatter_into(out, dim, index, v.data_ptr(), std::vector<int64_t>(static_cast<size_t>(rank_of(index)), 0), false, name);
  }
  static ops::Cost cost(const Tensor& out, const Tensor& x, int64_t, const Tensor& index, Scalar) {
    return {0, ops::bytes_held(x) + index.nbytes(), out.nbytes()};
  }
  static ops::SavedTensors saved(const SmallVector<bool, 4>&) { return {{false, true}, false}; }
  static TensorList backward(const ops::BackwardContext& c, const Tensor&, int64_t dim, const Tensor& index, Scalar) {
    return {scatter(c.grad, dim, index, Scalar(0)), Tensor()};
  }
};

}  // namespace

Tensor gather(const Tensor& x, int64_t dim, const Tensor& index) { return ops::apply<Gather>(x, dim, index); }
Tensor scatter(const Tensor& x, int64_t dim, const Tensor& index, const Tensor& src) { return ops::apply<Scatter<false>>(x, dim, index, src); }
Tensor scatter(const Tensor& x, int64_t dim, const Tensor& index, Scalar value) { return ops::apply<ScatterValue>(x, dim, index, value); }
Tensor scatter_add(const Tensor& x, int64_t dim, const Tensor& index, const Tensor& src) { return ops::apply<Scatter<true>>(x, dim, index, src); }

Tensor Tensor::gather(int64_t dim, const Tensor& index) const { return tally::gather(*this, dim, index); }
Tensor Tensor::scatter(int64_t dim, const Tensor& index, const Tensor& src) const { return tally::scatter(*this, dim, index, src); }
Tensor Tensor::scatter(int64_t dim, const Tensor& index, Scalar value) const { return tally::scatter(*this, dim, index, value); }
Tensor Tensor::scatter_add(int64_t dim, const Tensor& index, const Tensor& src) const { return tally::scatter_add(*this, dim, index, src); }
Tensor& Tensor::scatter_(int64_t dim, const Tensor& index, const Tensor& src) const { return ops::apply_inplace<Scatter<false>>(*this, dim, index, src); }
Tensor& Tensor::scatter_(int64_t dim, const Tensor& index, Scalar value) const { return ops::apply_inplace<ScatterValue>(*this, dim, index, value); }
Tensor& Tensor::scatter_add_(int64_t dim, const Tensor& index, const Tensor& src) const {
  return ops::apply_inplace<Scatter<true>>(*this, dim, index, src);
}

}  // namespace tally
