#pragma once
// The dtypes tally stores, one row each, in the order of their numeric ids. Both sides of the
// library are generated from this list: tally::Dtype and its names and sizes (dtype/dtype.h) for
// C++, and the dtype ids, names and sizes the CUDA kernels switch on (kernels/cuda/dtypes.cuh).
// The id crosses that boundary as a number, so the two must agree; they do by construction, and
// each side static_asserts its count against kDtypeRows below.
//
// Row: _(Enumerator, PyTorch's name, bytes per element). Plain preprocessor text, no includes:
// nvcc reads it without the library's headers.

#define TALLY_FORALL_DTYPES(_)       \
  _(Float32, "float32", 4)           \
  _(Float64, "float64", 8)           \
  _(Float16, "float16", 2)           \
  _(BFloat16, "bfloat16", 2)         \
  _(Float8_e4m3fn, "float8_e4m3fn", 1) \
  _(Float8_e5m2, "float8_e5m2", 1)   \
  _(Int32, "int32", 4)               \
  _(Int64, "int64", 8)               \
  _(UInt8, "uint8", 1)               \
  _(Bool, "bool", 1)

#define TALLY_DTYPE_COUNT_ROW_(name, torch_name, bytes) +1
namespace tally {
/// How many rows the list has, for the count checks on either side.
inline constexpr int kDtypeRows = 0 TALLY_FORALL_DTYPES(TALLY_DTYPE_COUNT_ROW_);
}  // namespace tally
#undef TALLY_DTYPE_COUNT_ROW_
