#include "tally/core/tensor.h"

#include "tally/core/geometry.h"

namespace tally {

TensorImpl& Tensor::impl() const {
  TALLY_CHECK(impl_ != nullptr, "tensor is undefined (a default-constructed Tensor)");
  return *impl_;
}

int64_t maybe_wrap_dim(int64_t dim, int64_t ndim, bool scalar_as_1d) {
  int64_t n = (ndim == 0 && scalar_as_1d) ? 1 : ndim;
  TALLY_CHECK_INDEX(n > 0, "dimension specified as ", dim, " but tensor has no dimensions");
  TALLY_CHECK_INDEX(dim >= -n && dim < n, "Dimension out of range (expected to be in range of [", -n, ", ", n - 1,
                    "], but got ", dim, ")");
  return dim < 0 ? dim + n : dim;
}

int64_t Tensor::size(int64_t d) const { return impl().sizes[static_cast<size_t>(maybe_wrap_dim(d, dim(), false))]; }
int64_t Tensor::stride(int64_t d) const { return impl().strides[static_cast<size_t>(maybe_wrap_dim(d, dim(), false))]; }
int64_t Tensor::numel() const { return geometry::numel(impl().sizes); }

void* Tensor::data_ptr() const {
  const TensorImpl& i = impl();
  TALLY_INTERNAL_ASSERT(!i.storage->is_stand_in(), "a backward rule read a tensor its op did not declare saved (",
                        dtype_name(i.dtype), " of shape ", i.sizes, "): see Note [Saved tensors] in ops/apply.h");
  TALLY_CHECK_TYPE(NotImplementedError, !i.storage->device().is_meta(), "a meta tensor (", dtype_name(i.dtype),
                   " of shape ", i.sizes, ") has no data: only its sizes, strides and dtype exist. Make it on a real "
                   "device to read or write its values");
  return static_cast<char*>(i.storage->data()) + i.storage_offset * tally::element_size(i.dtype);
}

bool Tensor::is_contiguous() const { return geometry::is_contiguous(impl().sizes, impl().strides); }

Scalar Tensor::item() const {
  TALLY_CHECK(numel() == 1, "a Tensor with ", numel(), " elements cannot be converted to Scalar");
  if (is_cuda()) return cpu().item();
  return dispatch(dtype(), "item", [&]<class T>() -> Scalar {
    T v = *static_cast<const T*>(data_ptr());
    if constexpr (std::is_same_v<T, bool> || std::is_integral_v<T>) return Scalar(v);
    else return Scalar(static_cast<double>(static_cast<compute_t<T>>(v)));
  });
}


}  // namespace tally
