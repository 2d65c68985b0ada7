#include "tally/core/memory_format.h"

#include "tally/core/geometry.h"

namespace tally {

DimVector strides_in_format(std::optional<MemoryFormat> format, IntArrayRef sizes, IntArrayRef strides) {
  if (format.value_or(MemoryFormat::Preserve) == MemoryFormat::Contiguous) return geometry::contiguous_strides(sizes);
  // PyTorch's preserve_format is the layout rule of an elementwise op with this one input: the
  // strides themselves for a dense tensor, else its dims' order made dense (infer_dense_strides).
  const geometry::StridedShape source{sizes, strides};
  return geometry::elementwise_output_strides(sizes, {&source, 1});
}

}  // namespace tally
