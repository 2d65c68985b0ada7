#include "tally/core/empty.h"

#include <functional>
#include <memory>

#include "tally/core/from_blob.h"
#include "tally/core/geometry.h"
#include "tally/core/object_pool.h"
#include "tally/error/error.h"

namespace tally {

namespace {
/// The bytes a tensor of this geometry reaches, checked (`op` names the caller in errors).
int64_t bytes_reached(IntArrayRef sizes, IntArrayRef strides, Dtype dtype, const char* op) {
  geometry::check_sizes(sizes, op);
  TALLY_CHECK(sizes.size() == strides.size(), op, ": ", sizes.size(), " sizes but ", strides.size(), " strides");
  int64_t extent = 1;  // elements from the first to one past the last
  for (size_t i = 0; i < sizes.size(); ++i) {
    if (sizes[i] == 0) { extent = 0; break; }
    TALLY_CHECK(strides[i] >= 0, op, ": negative stride ", strides[i]);
    extent += (sizes[i] - 1) * strides[i];
  }
  int64_t nbytes = 0;
  TALLY_CHECK(!__builtin_mul_overflow(extent, element_size(dtype), &nbytes), op, ": size overflow for sizes ", sizes);
  return nbytes;
}

Tensor over(Storage storage, IntArrayRef sizes, IntArrayRef strides, Dtype dtype) {
  auto impl = detail::make_pooled<TensorImpl>();
  impl->storage = std::move(storage);
  impl->sizes = DimVector(sizes);
  impl->strides = DimVector(strides);
  impl->dtype = dtype;
  return Tensor(std::move(impl));
}

Tensor make_empty(IntArrayRef sizes, IntArrayRef strides, TensorOptions options, MemoryCategory category) {
  const Dtype dtype = options.dtype_or(get_default_dtype());
  const int64_t nbytes = bytes_reached(sizes, strides, dtype, "empty_strided");
  return over(detail::make_pooled<StorageImpl>(nbytes, category, options.device_or()), sizes, strides, dtype);
}

}  // namespace

Tensor from_blob(void* data, IntArrayRef sizes, IntArrayRef strides, std::function<void(void*)> deleter, TensorOptions options) {
  const Device device = options.device_or();
  TALLY_CHECK_TYPE(DeviceError, !device.is_meta(), "from_blob: a meta tensor has no data to wrap");
  const Dtype dtype = options.dtype_or(get_default_dtype());
  const int64_t nbytes = bytes_reached(sizes, strides, dtype, "from_blob");
  TALLY_CHECK(data != nullptr || nbytes == 0, "from_blob: a null pointer for ", nbytes, " bytes of shape ", sizes);
  // The storage calls the deleter when it goes; without one it only forgets the pointer.
  if (!deleter) deleter = [](void*) {};
  return over(std::make_shared<StorageImpl>(data, nbytes, std::move(deleter), device), sizes, strides, dtype);
}

Tensor from_blob(void* data, IntArrayRef sizes, IntArrayRef strides, TensorOptions options) {
  return from_blob(data, sizes, strides, nullptr, options);
}

Tensor from_blob(void* data, IntArrayRef sizes, std::function<void(void*)> deleter, TensorOptions options) {
  return from_blob(data, sizes, geometry::contiguous_strides(sizes), std::move(deleter), options);
}

Tensor from_blob(void* data, IntArrayRef sizes, TensorOptions options) {
  return from_blob(data, sizes, geometry::contiguous_strides(sizes), nullptr, options);
}

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
