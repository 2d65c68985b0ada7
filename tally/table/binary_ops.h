#pragma once
// The binary elementwise ops of two tensors (broadcast together, PyTorch's type promotion), one
// row each, as tally/table/unary_ops.h lists the unary ones. From each row come the free
// function `tally::maximum(a, b)`, the out= form `tally::maximum_out(out, a, b)`
// (ops/elementwise.h), the method `a.maximum(b)` and in place `a.maximum_(b)` (core/tensor.h),
// its registry entry (ops/registry.h, which the differential tests run in every form), its CPU
// kernel in the per-target lists, and its CUDA enumerator (kernels/cuda/kernels.h) and launch
// case (kernels/cuda/elementwise.cu). Its scalar rule is `<Name>Math` in kernels/binary_math.h,
// which both devices compile; its definition (FLOPs, checks, gradients) is `<Name>Def` in
// ops/binary.cpp.
//
// add and sub are not rows: they take alpha, and are written out beside them with the same four
// forms.
//
// Row: _(function name, Name, what it computes). Plain preprocessor text, no includes.

#define TALLY_FORALL_BINARY_OPS(_)                       \
  _(mul, Mul, "a·b")                                     \
  _(div, Div, "a / b (true division)")                   \
  _(pow, Pow, "a ** b")                                  \
  _(maximum, Maximum, "the larger (NaN propagates)")     \
  _(minimum, Minimum, "the smaller (NaN propagates)")    \
  _(eq, Eq, "a == b (bool)")                             \
  _(ne, Ne, "a != b (bool)")                             \
  _(lt, Lt, "a < b (bool)")                              \
  _(le, Le, "a <= b (bool)")                             \
  _(gt, Gt, "a > b (bool)")                              \
  _(ge, Ge, "a >= b (bool)")
