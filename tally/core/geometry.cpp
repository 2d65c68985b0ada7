#include "tally/core/geometry.h"

#include <algorithm>

#include "tally/error/error.h"

namespace tally::geometry {

int64_t numel(IntArrayRef sizes) {
  int64_t n = 1;
  for (int64_t s : sizes) {
    TALLY_CHECK(!__builtin_mul_overflow(n, s, &n), "Storage size calculation overflowed with sizes=", sizes);
  }
  return n;
}

DimVector contiguous_strides(IntArrayRef sizes) {
  DimVector strides(sizes.size());
  int64_t s = 1;
  for (size_t i = sizes.size(); i-- > 0;) {
    strides[i] = s;
    s *= std::max<int64_t>(sizes[i], 1);
  }
  return strides;
}

bool is_contiguous(IntArrayRef sizes, IntArrayRef strides) {
  // As in PyTorch, a tensor with no elements is contiguous whatever its strides.
  if (std::find(sizes.begin(), sizes.end(), 0) != sizes.end()) return true;
  int64_t expected = 1;
  for (size_t i = sizes.size(); i-- > 0;) {
    if (sizes[i] == 1) continue;
    if (strides[i] != expected) return false;
    expected *= sizes[i];
  }
  return true;
}

bool is_non_overlapping_and_dense(IntArrayRef sizes, IntArrayRef strides) {
  const size_t nd = sizes.size();
  if (nd == 1) return sizes[0] < 2 || strides[0] == 1;
  // Dims by stride, innermost first; dims of size 0 or 1 go last, where the walk below stops.
  DimVector order(nd);
  for (size_t d = 0; d < nd; ++d) order[d] = static_cast<int64_t>(d);
  std::stable_sort(order.begin(), order.end(), [&](int64_t a, int64_t b) {
    if (sizes[a] < 2 || sizes[b] < 2) return sizes[a] >= 2 && sizes[b] < 2;
    return strides[a] < strides[b];
  });
  int64_t expected = 1;
  for (int64_t d : order) {
    if (sizes[d] < 2) return true;
    if (strides[d] != expected) return false;
    expected *= sizes[d];
  }
  return true;
}

DimVector elementwise_output_strides(IntArrayRef sizes, std::span<const StridedShape> inputs) {
  const size_t nd = sizes.size();
  if (nd < 2 || inputs.empty()) return contiguous_strides(sizes);
  bool same_shape = true, contiguous = true;
  for (const StridedShape& in : inputs) {
    if (in.sizes.size() > nd) return contiguous_strides(sizes);  // not an input broadcast to `sizes`
    same_shape = same_shape && in.sizes == sizes;
    contiguous = contiguous && is_contiguous(in.sizes, in.strides);
  }
  if (same_shape && contiguous) return contiguous_strides(sizes);
  if (same_shape) {  // one shared dense layout: the output takes it as it is
    bool shared = true;
    for (const StridedShape& in : inputs)
      shared = shared && in.strides == inputs[0].strides && is_non_overlapping_and_dense(in.sizes, in.strides);
    if (shared) return DimVector(inputs[0].strides);
  }
  // Each input's strides over the output's dims, right-aligned; a broadcast dim has stride 0.
  auto stride_of = [&](const StridedShape& in, size_t d) -> int64_t {
    const size_t offset = nd - in.sizes.size();
    if (d < offset) return 0;
    return in.sizes[d - offset] == 1 && sizes[d] != 1 ? 0 : in.strides[d - offset];
  };
  // > 0: dim a belongs outside dim b; < 0: inside; 0: no input decides.
  auto outer = [&](size_t a, size_t b) {
    for (const StridedShape& in : inputs) {
      const int64_t sa = stride_of(in, a), sb = stride_of(in, b);
      if (sa == 0 || sb == 0) continue;
      if (sa != sb) return sa < sb ? -1 : 1;
      if (sizes[a] > sizes[b]) return 1;
    }
    return 0;
  };
  // perm[0] is the innermost dim. An insertion sort that steps over undecided pairs, as
  // TensorIterator's: an order decided by one input is kept across dims no input orders.
  DimVector perm(nd);
  for (size_t i = 0; i < nd; ++i) perm[i] = static_cast<int64_t>(nd - 1 - i);
  for (size_t i = 1; i < nd; ++i) {
    size_t moving = i;
    for (size_t j = i; j-- > 0;) {
      const int c = outer(static_cast<size_t>(perm[j]), static_cast<size_t>(perm[moving]));
      if (c > 0) {
        std::swap(perm[j], perm[moving]);
        moving = j;
      } else if (c < 0) {
        break;
      }
    }
  }
  DimVector strides(nd);
  int64_t s = 1;
  for (int64_t d : perm) {
    strides[static_cast<size_t>(d)] = s;
    s *= sizes[static_cast<size_t>(d)];
  }
  return strides;
}

void check_sizes(IntArrayRef sizes, const char* op) {
  for (int64_t s : sizes)
    TALLY_CHECK(s >= 0, op, ": Trying to create tensor with negative dimension ", s, ": ", sizes);
  numel(sizes);
}

void check_no_internal_overlap(IntArrayRef sizes, IntArrayRef strides) {
  for (size_t i = 0; i < sizes.size(); ++i) {
    TALLY_CHECK(!(sizes[i] > 1 && strides[i] == 0),
                "unsupported operation: more than one element of the written-to tensor refers to a single memory "
                "location. Please clone() the tensor before performing the operation. (sizes ", sizes, ", strides ", strides, ")");
  }
}

DimVector fold_leading_dims(IntArrayRef sizes, int64_t kept) {
  const int64_t lead = std::max<int64_t>(static_cast<int64_t>(sizes.size()) - kept, 0);
  DimVector out{numel(sizes.slice(0, static_cast<size_t>(lead)))};
  for (size_t d = static_cast<size_t>(lead); d < sizes.size(); ++d) out.push_back(sizes[d]);
  return out;
}

DimVector infer_size(IntArrayRef shape, int64_t numel) {
  DimVector out(shape);
  int64_t known = 1;
  std::optional<size_t> infer;
  for (size_t i = 0; i < out.size(); ++i) {
    if (out[i] == -1) {
      TALLY_CHECK(!infer, "only one dimension can be inferred");
      infer = i;
    } else {
      TALLY_CHECK(out[i] >= 0, "invalid shape dimension ", out[i]);
      TALLY_CHECK(!__builtin_mul_overflow(known, out[i], &known), "shape ", shape, " is too large: size overflow");
    }
  }
  if (infer) {
    TALLY_CHECK(known != 0 && numel % known == 0, "shape '", shape, "' is invalid for input of size ", numel);
    out[*infer] = numel / known;
  } else {
    TALLY_CHECK(known == numel, "shape '", shape, "' is invalid for input of size ", numel);
  }
  return out;
}

std::optional<DimVector> view_strides(IntArrayRef sizes, IntArrayRef strides, IntArrayRef new_sizes) {
  DimVector out(new_sizes.size());
  if (sizes.empty()) {  // a 0-d tensor views as any all-ones shape
    std::fill(out.begin(), out.end(), 1);
    return out;
  }
  if (numel(sizes) == 0) {
    if (sizes == new_sizes) return DimVector(strides);
    return contiguous_strides(new_sizes);
  }
  // Walk the old dims in chunks that are contiguous with each other; each chunk must be split
  // exactly by a run of new dims.
  int64_t view_d = static_cast<int64_t>(new_sizes.size()) - 1;
  int64_t chunk_base_stride = strides.back();
  int64_t tensor_numel = 1, view_numel = 1;
  for (int64_t d = static_cast<int64_t>(sizes.size()) - 1; d >= 0; --d) {
    tensor_numel *= sizes[d];
    if (d == 0 || (sizes[d - 1] != 1 && strides[d - 1] != tensor_numel * chunk_base_stride)) {
      while (view_d >= 0 && (view_numel < tensor_numel || new_sizes[view_d] == 1)) {
        out[view_d] = view_numel * chunk_base_stride;
        view_numel *= new_sizes[view_d];
        --view_d;
      }
      if (view_numel != tensor_numel) return std::nullopt;
      if (d > 0) {
        chunk_base_stride = strides[d - 1];
        tensor_numel = 1;
        view_numel = 1;
      }
    }
  }
  if (view_d != -1) return std::nullopt;
  return out;
}

DimVector broadcast_shapes(IntArrayRef a, IntArrayRef b) {
  size_t n = std::max(a.size(), b.size());
  DimVector out(n);
  for (size_t i = 0; i < n; ++i) {
    int64_t da = i < n - a.size() ? 1 : a[i - (n - a.size())];
    int64_t db = i < n - b.size() ? 1 : b[i - (n - b.size())];
    TALLY_CHECK(da == db || da == 1 || db == 1, "The size of tensor a (", da, ") must match the size of tensor b (", db,
                ") at non-singleton dimension ", i, " (shapes ", a, " and ", b, ")");
    out[i] = da == 1 ? db : da;
  }
  return out;
}

}  // namespace tally::geometry
