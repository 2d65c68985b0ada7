#pragma once
// From tensors to a CUDA elementwise launch: the same dimension ordering and merging as the CPU
// loops (kernels::StridedLoop), written into the plain struct the .cu kernels read.

#include <array>
#include <cstring>

#include "tally/core/tensor.h"
#include "tally/kernels/cpu/strided_loop.h"
#include "tally/kernels/cuda/kernels.h"

namespace tally::ops {

/// The launch over (out, inputs...) with inputs broadcast to out's sizes. An input on the CPU
/// (a 0-d tensor: Note [Devices] in apply.h) travels inline as a kernel argument.
template <size_t N>
kernels::cuda::Launch cuda_launch(const Tensor& out, std::array<const Tensor*, N - 1> inputs) {
  static_assert(N <= kernels::cuda::kMaxOperands);
  std::array<Tensor, N> t{out};
  for (size_t i = 0; i < N - 1; ++i)
    t[i + 1] = inputs[i]->sizes() == out.sizes() ? *inputs[i] : inputs[i]->expand(out.sizes());
  std::array<char*, N> ptrs{};
  std::array<IntArrayRef, N> strides;
  std::array<int64_t, N> elem{};
  for (size_t i = 0; i < N; ++i) {
    ptrs[i] = static_cast<char*>(t[i].data_ptr());
    strides[i] = t[i].strides();
    elem[i] = t[i].element_size();
  }
  kernels::StridedLoop<N> loop(out.sizes(), ptrs, strides, elem);
  kernels::cuda::Launch l;
  l.numel = loop.numel;
  l.noperands = static_cast<int>(N);
  l.ndim = static_cast<int>(loop.sizes.size());
  TALLY_CHECK_TYPE(NotImplementedError, l.ndim <= kernels::cuda::kMaxDims, "CUDA elementwise ops take at most ",
                   kernels::cuda::kMaxDims, " dims after merging; got ", l.ndim, " for shape ", out.sizes(),
                   ": make the operands contiguous first");
  for (int d = 0; d < l.ndim; ++d) l.sizes[d] = loop.sizes[static_cast<size_t>(d)];
  l.dense = l.ndim <= 1;
  for (size_t i = 0; i < N; ++i) {
    kernels::cuda::Operand& op = l.op[i];
    op.dtype = static_cast<uint8_t>(t[i].dtype());
    if (t[i].is_cpu()) {  // a 0-d host tensor: its value rides along (never the output: out is on the GPU)
      op.is_inline = true;
      std::memcpy(op.inline_value, t[i].data_ptr(), static_cast<size_t>(t[i].element_size()));
      continue;
    }
    op.data = ptrs[i];
    for (int d = 0; d < l.ndim; ++d) op.strides[d] = loop.strides[i][static_cast<size_t>(d)];
    if (l.ndim == 1 && op.strides[0] != elem[i]) l.dense = false;
  }
  return l;
}

}  // namespace tally::ops
