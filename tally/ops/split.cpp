#include "tally/ops/split.h"

#include "tally/error/error.h"

namespace tally {

namespace {

/// `dim` of x, checked and wrapped; a 0-d tensor has none to split.
int64_t split_dim(const Tensor& x, int64_t dim, std::string_view op) {
  TALLY_CHECK_INDEX(x.dim() > 0, op, ": expected a tensor with at least one dimension, got a 0-d tensor");
  return maybe_wrap_dim(dim, x.dim());
}

}  // namespace

TensorList split(const Tensor& x, int64_t split_size, int64_t dim) {
  const int64_t d = split_dim(x, dim, "split");
  const int64_t n = x.size(d);
  TALLY_CHECK(split_size >= 0, "split expects split_size be non-negative, but got split_size=", split_size);
  TALLY_CHECK(split_size > 0 || n == 0, "split_size can only be 0 if dimension size is 0, but got dimension size of ", n);
  DimVector sizes;  // pieces of split_size, the last one what is left; an empty dim is one empty piece
  for (int64_t start = 0; start < n || sizes.empty(); start += split_size) sizes.push_back(std::min(split_size, n - start));
  return split_with_sizes(x, sizes, d);
}

TensorList split_with_sizes(const Tensor& x, IntArrayRef split_sizes, int64_t dim) {
  const int64_t d = split_dim(x, dim, "split_with_sizes");
  int64_t total = 0;
  for (int64_t s : split_sizes) {
    TALLY_CHECK(s >= 0, "split_with_sizes expects split_sizes have only non-negative entries, but got split_sizes=", split_sizes);
    total += s;
  }
  TALLY_CHECK(total == x.size(d), "split_with_sizes expects split_sizes to sum exactly to ", x.size(d), " (input tensor's size at dimension ",
              d, "), but got split_sizes=", split_sizes);
  TensorList pieces;
  int64_t start = 0;
  for (int64_t s : split_sizes) {
    pieces.push_back(x.narrow(d, start, s));
    start += s;
  }
  return pieces;
}

TensorList chunk(const Tensor& x, int64_t chunks, int64_t dim) {
  const int64_t d = split_dim(x, dim, "chunk");
  TALLY_CHECK(chunks > 0, "chunk expects `chunks` to be greater than 0, got: ", chunks);
  const int64_t n = x.size(d);
  if (n == 0) return split_with_sizes(x, DimVector(static_cast<size_t>(chunks), 0), d);
  return split(x, (n + chunks - 1) / chunks, d);
}

TensorList unbind(const Tensor& x, int64_t dim) {
  TALLY_CHECK_INDEX(x.dim() > 0, "Dimension specified as ", dim, " but tensor has no dimensions");
  const int64_t d = maybe_wrap_dim(dim, x.dim());
  TensorList slices;
  for (int64_t i = 0; i < x.size(d); ++i) slices.push_back(x.select(d, i));
  return slices;
}

Tensor unflatten(const Tensor& x, int64_t dim, IntArrayRef sizes) {
  TALLY_CHECK_INDEX(x.dim() > 0, "Dimension specified as ", dim, " but tensor has no dimensions");
  const int64_t d = maybe_wrap_dim(dim, x.dim());
  TALLY_CHECK(!sizes.empty(), "unflatten: sizes must be non-empty");
  int64_t known = 1, inferred = -1;
  for (size_t i = 0; i < sizes.size(); ++i) {
    if (sizes[i] == -1) {
      TALLY_CHECK(inferred < 0, "unflatten: only one dimension can be inferred, got sizes ", sizes);
      inferred = static_cast<int64_t>(i);
    } else {
      TALLY_CHECK(sizes[i] >= 0, "unflatten: sizes must be non-negative or -1, got ", sizes);
      known *= sizes[i];
    }
  }
  const int64_t n = x.size(d);
  DimVector piece(sizes);
  if (inferred >= 0 && known > 0 && n % known == 0) piece[static_cast<size_t>(inferred)] = n / known;
  int64_t product = 1;
  for (int64_t s : piece) product *= s;
  TALLY_CHECK(product == n && (inferred < 0 || known > 0), "unflatten: Provided sizes ", sizes, " don't multiply up to the size of dim ", d,
              " (", n, ") in the input tensor");
  DimVector shape(x.sizes().begin(), x.sizes().begin() + d);
  shape.insert(shape.end(), piece.begin(), piece.end());
  shape.insert(shape.end(), x.sizes().begin() + d + 1, x.sizes().end());
  return x.view(shape);
}

}  // namespace tally
