// Tensor::resize_: a tensor's shape changed in place, as libtorch's resize_.

#include "tally/core/geometry.h"
#include "tally/core/tensor.h"
#include "tally/ops/creation.h"

namespace tally {

Tensor& Tensor::resize_(IntArrayRef sizes) const {
  TALLY_CHECK(!requires_grad(), "cannot resize variables that require grad");
  for (int64_t s : sizes) TALLY_CHECK(s >= 0, "Trying to create tensor with negative dimension ", s, ": ", sizes);
  TensorImpl& t = impl();
  const int64_t itemsize = tally::element_size(t.dtype);
  const int64_t needed = t.storage_offset + geometry::numel(sizes);  // elements the storage must hold
  const int64_t held = t.storage ? t.storage->nbytes() / itemsize : 0;
  if (needed > held) {
    // A larger storage on the same device and in the same memory category, starting with the old
    // elements, as libtorch's keeps them (the rest is uninitialised).
    const Tensor larger = empty({needed}, TensorOptions(t.dtype).device(device()));
    if (held > 0) larger.narrow(0, 0, held).copy_(as_strided({held}, {1}, 0));
    if (t.storage) larger.storage()->set_category(t.storage->category());
    t.storage = larger.impl().storage;
  }
  t.sizes = DimVector(sizes);
  t.strides = geometry::contiguous_strides(sizes);
  return const_cast<Tensor&>(*this);
}

}  // namespace tally
