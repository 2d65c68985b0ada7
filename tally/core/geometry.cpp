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
  int64_t expected = 1;
  for (size_t i = sizes.size(); i-- > 0;) {
    if (sizes[i] == 0) return true;
    if (sizes[i] == 1) continue;
    if (strides[i] != expected) return false;
    expected *= sizes[i];
  }
  return true;
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
