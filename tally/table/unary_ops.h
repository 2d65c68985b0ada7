#pragma once
// The unary elementwise ops, one row each (in the spirit of ATen's native_functions.yaml). Every
// form of every op comes from this list, so each op has all of them:
//   - the free function `tally::exp(x)` and the out= form `tally::exp_out(out, x)`
//     (ops/elementwise.h), the method `x.exp()` and the in-place `x.exp_()` (core/tensor.h);
//   - its row in the registry the tests iterate (ops/registry.h: gradcheck, second-order
//     gradcheck, the ledger-cost test, the differential tests against PyTorch in every form);
//   - its CPU kernel in the per-target kernel lists, and its CUDA kernel: the `UnaryOp`
//     enumerator (kernels/cuda/kernels.h) and the case that launches it (elementwise.cu).
// What an op is lives in two structs named after its row: `<Name>Math` in
// kernels/unary_math.h, the scalar rule and the dtypes it takes, compiled for the CPU and the GPU
// alike; and `<Name>Def` in ops/unary.cpp, its ledger cost, its gradient, its reference in
// PyTorch and its optional 16-lane CPU form. Adding an op is those two and one row here.
//
// Row: _(function name, Name, what it computes). Plain preprocessor text, no includes.

#define TALLY_FORALL_UNARY_OPS(_)                                        \
  _(neg, Neg, "−x")                                                      \
  _(abs, Abs, "|x|")                                                     \
  _(sqrt, Sqrt, "√x")                                                    \
  _(rsqrt, Rsqrt, "1/√x")                                                \
  _(exp, Exp, "eˣ")                                                      \
  _(log, Log, "ln x")                                                    \
  _(tanh, Tanh, "tanh x")                                                \
  _(sigmoid, Sigmoid, "1/(1+e⁻ˣ)")                                       \
  _(silu, Silu, "x·sigmoid(x)")                                          \
  _(erf, Erf, "the error function")                                      \
  _(relu, Relu, "max(x, 0)")                                             \
  _(square, Square, "x²")                                                \
  _(softplus, Softplus, "ln(1 + eˣ) (beta 1, threshold 20)")             \
  _(log1p, Log1p, "ln(1 + x), accurate near 0")                          \
  _(expm1, Expm1, "eˣ − 1, accurate near 0")                             \
  _(log2, Log2, "log₂ x")                                                \
  _(log10, Log10, "log₁₀ x")                                             \
  _(reciprocal, Reciprocal, "1/x (integers in float32)")                 \
  _(sin, Sin, "sin x")                                                   \
  _(cos, Cos, "cos x")                                                   \
  _(floor, Floor, "⌊x⌋ (integers as they are; bool refused)")            \
  _(ceil, Ceil, "⌈x⌉")                                                   \
  _(round, Round, "the nearest whole number, halves to even")            \
  _(trunc, Trunc, "towards zero")                                        \
  _(sign, Sign, "−1, 0 or 1 (0 for NaN); bool as it is")                 \
  _(logit, Logit, "ln(x / (1 − x))")
