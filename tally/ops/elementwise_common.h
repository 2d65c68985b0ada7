#pragma once
// Shared plumbing of the elementwise op families (unary.cpp, binary.cpp): the output
// allocation after broadcasting and the cost every elementwise op declares.

#include "tally/core/geometry.h"
#include "tally/kernels/cpu/elementwise.h"
#include "tally/ops/apply.h"
#include "tally/ops/creation.h"

namespace tally::ops {

/// One pass that reads every input once and writes the output once, doing `flops_per_element`
/// arithmetic steps per output element.
inline Cost elementwise_cost(const Tensor& out, std::initializer_list<const Tensor*> inputs, int64_t flops_per_element) {
  Cost c{out.numel() * flops_per_element, 0, out.nbytes()};
  for (const Tensor* t : inputs) c.bytes_read += bytes_held(*t);  // Note [Bytes read]
  return c;
}

/// The loop over (out, inputs...) with inputs expanded to out's sizes.
template <size_t N>
kernels::StridedLoop<N> make_loop(const Tensor& out, std::array<const Tensor*, N - 1> inputs) {
  std::array<char*, N> ptrs{static_cast<char*>(out.data_ptr())};
  std::array<IntArrayRef, N> strides{out.strides()};
  std::array<int64_t, N> elem{out.element_size()};
  // The common case, dense operands of one shape, needs no dim sorting or merging.
  bool dense = out.is_contiguous();
  for (size_t i = 0; i < N - 1 && dense; ++i) dense = inputs[i]->sizes() == out.sizes() && inputs[i]->is_contiguous();
  if (dense) {
    for (size_t i = 0; i < N - 1; ++i) {
      ptrs[i + 1] = static_cast<char*>(inputs[i]->data_ptr());
      elem[i + 1] = inputs[i]->element_size();
    }
    return kernels::StridedLoop<N>::dense(out.numel(), ptrs, elem);
  }
  std::array<Tensor, N - 1> expanded;
  for (size_t i = 0; i < N - 1; ++i) {
    expanded[i] = inputs[i]->sizes() == out.sizes() ? *inputs[i] : inputs[i]->expand(out.sizes());
    ptrs[i + 1] = static_cast<char*>(expanded[i].data_ptr());
    strides[i + 1] = expanded[i].strides();
    elem[i + 1] = expanded[i].element_size();
  }
  return kernels::StridedLoop<N>(out.sizes(), ptrs, strides, elem);
}

}  // namespace tally::ops

/// Row<Def>, declared by each elementwise family for its definitions: what a table row (or the
/// family, for an op outside its table) gives a definition, its name and its CUDA kernel.
#define TALLY_ELEMENTWISE_ROW(Def, op_name, cuda_enumerator) \
  template <>                                               \
  struct Row<Def> {                                         \
    static constexpr std::string_view name = op_name;       \
    static constexpr auto cuda_op = cuda_enumerator;        \
  };
