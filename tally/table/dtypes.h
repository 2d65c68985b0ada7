#pragma once
// The dtypes tally stores, one row each, in the order of their numeric ids. Both sides of the
// library are generated from this list: tally::Dtype and its names and sizes (dtype/dtype.h) for
// C++, and the dtype ids, names and sizes the CUDA kernels switch on (kernels/cuda/dtypes.cuh).
// The id crosses that boundary as a number, so the two must agree; they do by construction, and
// each side static_asserts its count against kDtypeRows below.
//
// Row: _(Enumerator, PyTorch's name, bytes per element, libtorch's ScalarType name). Plain
// preprocessor text, no includes: nvcc reads it without the library's headers. A use names the
// columns it reads and takes the rest as `...`, so that a new column changes no use.

#define TALLY_FORALL_DTYPES(_)                            \
  _(Float32, "float32", 4, Float)                         \
  _(Float64, "float64", 8, Double)                        \
  _(Float16, "float16", 2, Half)                          \
  _(BFloat16, "bfloat16", 2, BFloat16)                    \
  _(Float8_e4m3fn, "float8_e4m3fn", 1, Float8_e4m3fn)     \
  _(Float8_e5m2, "float8_e5m2", 1, Float8_e5m2)           \
  _(Int32, "int32", 4, Int)                               \
  _(Int64, "int64", 8, Long)                              \
  _(UInt8, "uint8", 1, Byte)                              \
  _(Int8, "int8", 1, Char)                                \
  _(Int16, "int16", 2, Short)                             \
  _(Bool, "bool", 1, Bool)

#define TALLY_DTYPE_COUNT_ROW_(...) +1
namespace tally {
/// How many rows the list has, for the count checks on either side.
inline constexpr int kDtypeRows = 0 TALLY_FORALL_DTYPES(TALLY_DTYPE_COUNT_ROW_);
}  // namespace tally
#undef TALLY_DTYPE_COUNT_ROW_
