#include "tally/core/empty.h"

#include "tally/core/geometry.h"
#include "tally/core/object_pool.h"
#include "tally/error/error.h"

namespace tally {

namespace {
Tensor make_empty(IntArrayRef sizes, IntArrayRef strides, TensorOptions options, MemoryCategory category) {
  const Dtype dtype = options.dtype_or(kFloat32);
  geometry::check_sizes(sizes, "empty");
  TALLY_CHECK(sizes.size() == strides.size(), "empty_strided: ", sizes.size(), " sizes but ", strides.size(), " strides");
  int64_t extent = 1;  // elements from the first to one past the last
  for (size_t i = 0; i < sizes.size(); ++i) {
    if (sizes[i] == 0) { extent = 0; break; }
    TALLY_CHECK(strides[i] >= 0, "empty_strided: negative stride ", strides[i]);
    extent += (sizes[i] - 1) * strides[i];
  }
  int64_t nbytes = 0;
  TALLY_CHECK(!__builtin_mul_overflow(extent, element_size(dtype), &nbytes), "empty: size overflow for sizes ", sizes);
  auto impl = detail::make_pooled<TensorImpl>();
  impl->storage = detail::make_pooled<StorageImpl>(nbytes, category, options.device_or());
  impl->sizes = DimVector(sizes);
  impl->strides = DimVector(strides);
  impl->dtype = dtype;
  return Tensor(std::move(impl));
}

}  // namespace

Tensor empty_strided(IntArrayRef sizes, IntArrayRef strides, TensorOptions options) {
  return make_empty(sizes, strides, options, MemoryCategory::Other);
}

Tensor empty(IntArrayRef sizes, TensorOptions options) {
  geometry::check_sizes(sizes, "empty");
  return empty_strided(sizes, geometry::contiguous_strides(sizes), options);
}

Tensor detail::empty_activation(IntArrayRef sizes, IntArrayRef strides, TensorOptions options) {
  return make_empty(sizes, strides, options, MemoryCategory::Activations);
}

}  // namespace tally
