// cat / stack / index_select. Cost: pure data movement, bytes read + bytes written.

#include "tally/ops/join.h"

#include <cstring>
#include <utility>

#include "tally/kernels/cuda/kernels.h"
#include "tally/ops/apply.h"
#include "tally/ops/checked_index.h"
#include "tally/ops/creation.h"
#include "tally/ops/elementwise.h"

namespace tally {

namespace {

/// torch.cat's legacy rule: a 1-D tensor of size 0 (torch.tensor([]), the usual start of a list
/// grown by cat) is left out of the shape checks and the output, whatever the others' shape.
bool skipped_by_cat(const Tensor& t) { return t.dim() == 1 && t.size(0) == 0; }

struct Cat {
  static constexpr std::string_view name = "cat";
  static constexpr bool supports_cuda = true;  // an output and copy_ into its slices: any device
  static ops::OutputSpec meta(const TensorList& tensors, int64_t dim) {
    TALLY_CHECK(!tensors.empty(), "torch.cat(): expected a non-empty list of Tensors");
    for (size_t i = 0; i < tensors.size(); ++i)
      TALLY_CHECK(tensors[i].dim() > 0, "zero-dimensional tensor (at position ", i, ") cannot be concatenated");
    // The shape comes from the first tensor the legacy rule keeps (the first, if it keeps none).
    size_t ref = 0;
    while (ref < tensors.size() && skipped_by_cat(tensors[ref])) ++ref;
    if (ref == tensors.size()) ref = 0;
    const Tensor& first = tensors[ref];
    dim = maybe_wrap_dim(dim, first.dim());
    Dtype dt = tensors[0].dtype();
    int64_t total = 0;
    for (size_t i = 0; i < tensors.size(); ++i) {
      const Tensor& t = tensors[i];
      if (i > 0) dt = promote_types(dt, t.dtype());  // a skipped tensor's dtype still counts, as in PyTorch
      if (i != ref && skipped_by_cat(t)) continue;
      TALLY_CHECK(t.dim() == first.dim(), "Tensors must have same number of dimensions: got ", first.dim(), " and ", t.dim());
      for (int64_t d = 0; d < t.dim(); ++d) {
        TALLY_CHECK(d == dim || t.size(d) == first.size(d), "Sizes of tensors must match except in dimension ", dim,
                    ". Expected size ", first.size(d), " but got size ", t.size(d), " for tensor number ", i, " in the list.");
      }
      total += t.size(dim);
    }
    DimVector sizes(first.sizes());
    sizes[dim] = total;
    return {std::move(sizes), dt};
  }
  static void compute(const Tensor& out, const TensorList& tensors, int64_t dim) {
    dim = maybe_wrap_dim(dim, out.dim());
    int64_t offset = 0;
    for (const Tensor& t : tensors) {
      if (skipped_by_cat(t)) continue;  // no elements to copy, whatever shape the others have
      out.slice(dim, offset, offset + t.size(dim)).copy_(t);
      offset += t.size(dim);
    }
  }
  static ops::Cost cost(const Tensor& out, const TensorList& tensors, int64_t) {
    ops::Cost c{0, 0, out.nbytes()};
    for (const Tensor& t : tensors) c.bytes_read += ops::bytes_held(t);  // Note [Bytes read]
    return c;
  }
  // Each input gets its slice of the gradient, by its size alone (Note [Version counter]).
  static constexpr bool backward_reads_values = false;
  static TensorList backward(const ops::BackwardContext& c, const TensorList& tensors, int64_t dim) {
    dim = maybe_wrap_dim(dim, c.grad.dim());
    TensorList grads(tensors.size());
    int64_t offset = 0;
    for (size_t i = 0; i < tensors.size(); ++i) {
      if (skipped_by_cat(tensors[i])) {
        if (c.needs_grad(i)) grads[i] = zeros_like(tensors[i]);
        continue;
      }
      const int64_t n = tensors[i].size(dim);
      if (c.needs_grad(i)) grads[i] = c.grad.narrow(dim, offset, n).to(tensors[i].dtype());
      offset += n;
    }
    return grads;
  }
};

/// The element counts of x's dims before `dim` and after it: a contiguous x is `outer` blocks of
/// size(dim) rows of `inner` elements, the rows index_select gathers and index_add scatters into.
std::pair<int64_t, int64_t> around(const Tensor& x, int64_t dim) {
  int64_t outer = 1, inner = 1;
  for (int64_t d = 0; d < dim; ++d) outer *= x.size(d);
  for (int64_t d = dim + 1; d < x.dim(); ++d) inner *= x.size(d);
  return {outer, inner};
}

struct IndexSelect {
  static constexpr std::string_view name = "index_select";
  static constexpr bool supports_cuda = true;
  static ops::OutputSpec meta(const Tensor& x, int64_t dim, const Tensor& index) {
    TALLY_CHECK_TYPE_ERROR(index.dtype() == kInt64 || index.dtype() == kInt32,
                           "index_select(): Expected dtype int32/int64 for index but got: ", dtype_name(index.dtype()));
    TALLY_CHECK_INDEX(index.dim() <= 1, "index_select(): Index is supposed to be a vector, got ", index.dim(), "-D");
    dim = maybe_wrap_dim(dim, x.dim());
    DimVector sizes(x.sizes());
    if (x.dim() > 0) sizes[dim] = index.numel();
    return {std::move(sizes), x.dtype()};
  }
  // Reads the indices, so their bounds are checked here, with the values.
  static void compute(const Tensor& out, const Tensor& x, int64_t dim, const Tensor& index) {
    dim = maybe_wrap_dim(dim, x.dim());
    const int64_t n = x.dim() == 0 ? 1 : x.size(dim);
    const Tensor idx = ops::checked_index(index, n, "index out of range in self: index ", dim);
    if (x.dim() == 0) {
      Tensor(out).copy_(x);
      return;
    }
    // Rows of the output are copied from the selected rows: contiguous blocks when `x` is.
    Tensor src = x.contiguous();
    const auto [outer, inner] = around(x, dim);
    const int64_t k = idx.numel();
    if (out.is_cuda()) {
      const Tensor ids = idx.to(out.device());
      kernels::cuda::index_select_rows(static_cast<uint8_t>(x.dtype()), src.data_ptr(), out.data_ptr(), ids.data_ptr<int64_t>(),
                                       outer, n, k, inner);
      return;
    }
    const int64_t* ids = idx.data_ptr<int64_t>();
    const int64_t row_bytes = inner * x.element_size();
    const char* s = static_cast<const char*>(src.data_ptr());
    char* o = static_cast<char*>(out.data_ptr());
    // Both cores from a quarter MiB on: a [2048, 2048] gather took 0.51 ms on one, PyTorch 0.16.
    const int64_t rows = outer * k;
#pragma omp parallel for schedule(static) if (rows * row_bytes >= (int64_t{1} << 18))
    for (int64_t r = 0; r < rows; ++r)
      std::memcpy(o + r * row_bytes, s + (r / k * n + ids[r % k]) * row_bytes, static_cast<size_t>(row_bytes));
  }
  static ops::Cost cost(const Tensor& out, const Tensor& x, int64_t, const Tensor& index) {
    return {0, out.nbytes() + index.nbytes(), out.nbytes()};
  }
  // The gathered rows' gradients are added back at their indices (repeated indices accumulate):
  // the index is read, the source only for its shape.
  static ops::SavedTensors saved(const SmallVector<bool, 4>&) { return {{false, true}, false}; }
  static TensorList backward(const ops::BackwardContext& c, const Tensor& x, int64_t dim, const Tensor& index) {
    return {index_add(zeros(x.sizes(), c.grad.options()), dim, index, c.grad), Tensor()};
  }
};

struct IndexAdd {
  static constexpr std::string_view name = "index_add";
  static constexpr bool supports_cuda = true;
  static ops::OutputSpec meta(const Tensor& x, int64_t dim, const Tensor& index, const Tensor& source) {
    TALLY_CHECK_TYPE_ERROR(index.dtype() == kInt64 || index.dtype() == kInt32,
                           "index_add_(): Expected dtype int32/int64 for index but got: ", dtype_name(index.dtype()));
    TALLY_CHECK_TYPE_ERROR(x.dtype() == source.dtype(), "index_add_(): self (", dtype_name(x.dtype()), ") and source (",
                           dtype_name(source.dtype()), ") must have the same scalar type");
    TALLY_CHECK_INDEX(index.dim() <= 1, "index_add_(): Index is supposed to be a vector, got ", index.dim(), "-D");
    dim = maybe_wrap_dim(dim, x.dim());
    if (x.dim() == 0) {  // one element, added to once per index: a source of [k] (or [] for one index), as PyTorch's
      TALLY_CHECK(source.dim() <= 1 && source.numel() == index.numel(), "index_add_(): Number of indices (", index.numel(),
                  ") should be equal to source.size(dim): (", source.numel(), "), for dim: ", dim, " (self is 0-d, source of shape ",
                  source.sizes(), ")");
      return {DimVector(x.sizes()), x.dtype()};
    }
    std::vector<int64_t> expected = x.sizes().vec();
    expected[dim] = index.numel();
    TALLY_CHECK(source.sizes() == IntArrayRef(expected), "index_add_(): source of shape ", source.sizes(), " does not match ",
                IntArrayRef(expected), " (self ", x.sizes(), " with ", index.numel(), " indices along dim ", dim, ")");
    return {DimVector(x.sizes()), x.dtype()};
  }
  static void compute(const Tensor& out, const Tensor& x, int64_t dim, const Tensor& index, const Tensor& source) {
    dim = maybe_wrap_dim(dim, x.dim());
    const int64_t n = x.dim() == 0 ? 1 : x.size(dim);
    const Tensor idx = ops::checked_index(index, n, "index_add_(): index ", dim);
    if (!out.is_same(x)) Tensor(out).copy_(x);
    const int64_t k = idx.numel();
    // Row by row in index order, as index_select's gather in reverse (an embedding's backward:
    // thousands of token rows into a small table), each sum rounded once like add_'s; repeated
    // indices accumulate in order on the CPU, in no fixed order on the GPU (its atomics). `out`
    // is contiguous (Note [Forms]).
    const Tensor src = source.contiguous();
    const auto [outer, inner] = around(x, dim);
    if (out.is_cuda()) {
      const Tensor ids = idx.to(out.device());
      kernels::cuda::index_add_rows(static_cast<uint8_t>(x.dtype()), out.data_ptr(), ids.data_ptr<int64_t>(), src.data_ptr(),
                                    outer, n, k, inner);
      return;
    }
    const int64_t* ids = idx.data_ptr<int64_t>();
    dispatch_arith(x.dtype(), name, [&]<class T>() {
      using C = compute_t<T>;
      T* o = static_cast<T*>(out.data_ptr());
      const T* sp = static_cast<const T*>(src.data_ptr());
      for (int64_t a = 0; a < outer; ++a) {
        for (int64_t i = 0; i < k; ++i) {
          T* dst = o + (a * n + ids[i]) * inner;
          const T* row = sp + (a * k + i) * inner;
          for (int64_t j = 0; j < inner; ++j) dst[j] = cast_to<T>(static_cast<C>(dst[j]) + static_cast<C>(row[j]));
        }
      }
    });
  }
  static ops::Cost cost(const Tensor& out, const Tensor& x, int64_t, const Tensor& index, const Tensor& source) {
    return {source.numel(), ops::bytes_held(x) + ops::bytes_held(source) + ops::bytes_held(index), out.nbytes()};
  }
  // self's gradient passes through; the source's gathers at the index, which alone is read (self
  // and the source for their shapes).
  static ops::SavedTensors saved(const SmallVector<bool, 4>&) { return {{false, true, false}, false}; }
  static TensorList backward(const ops::BackwardContext& c, const Tensor& x, int64_t dim, const Tensor& index, const Tensor& source) {
    TensorList grads(3);
    if (c.needs_grad(0)) grads[0] = c.grad;
    // A 0-d self's one element took every source element.
    if (c.needs_grad(2)) grads[2] = x.dim() == 0 ? c.grad.expand(source.sizes()) : index_select(c.grad, dim, index);
    return grads;
  }
};

}  // namespace

Tensor ops::checked_index(const Tensor& index, int64_t n, const char* what, int64_t dim) {
  Tensor idx = index.to(kCPU).to(kInt64).contiguous().reshape({-1});
  const int64_t* ids = idx.data_ptr<int64_t>();
  for (int64_t i = 0; i < idx.numel(); ++i)
    TALLY_CHECK_INDEX(ids[i] >= 0 && ids[i] < n, what, ids[i], " is out of bounds for dimension ", dim, " with size ", n);
  return idx;
}

Tensor cat(const TensorList& tensors, int64_t dim) { return ops::apply<Cat>(tensors, dim); }

Tensor stack(const TensorList& tensors, int64_t dim) {
  TALLY_CHECK(!tensors.empty(), "stack expects a non-empty TensorList");
  dim = maybe_wrap_dim(dim, tensors[0].dim() + 1);
  TensorList expanded;
  for (size_t i = 0; i < tensors.size(); ++i) {
    TALLY_CHECK(tensors[i].sizes() == tensors[0].sizes(), "stack expects each tensor to be equal size, but got ",
                tensors[0].sizes(), " at entry 0 and ", tensors[i].sizes(), " at entry ", i);
    expanded.push_back(tensors[i].unsqueeze(dim));
  }
  return cat(expanded, dim);
}

Tensor index_select(const Tensor& x, int64_t dim, const Tensor& index) { return ops::apply<IndexSelect>(x, dim, index); }
Tensor index_add(const Tensor& x, int64_t dim, const Tensor& index, const Tensor& source) {
  return ops::apply<IndexAdd>(x, dim, index, source);
}

Tensor embedding(const Tensor& weight, const Tensor& indices) {
  TALLY_CHECK(weight.dim() == 2, "embedding: weight must be 2-D, got ", weight.sizes());
  std::vector<int64_t> sizes = indices.sizes().vec();
  sizes.push_back(weight.size(1));
  return index_select(weight, 0, indices.reshape({-1})).view(sizes);
}

Tensor Tensor::index_select(int64_t dim, const Tensor& index) const { return tally::index_select(*this, dim, index); }

}  // namespace tally
