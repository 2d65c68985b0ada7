#include "tally/dtype/dtype.h"

namespace tally {

std::string_view dtype_name(Dtype d) {
  switch (d) {
    case Dtype::Float32: return "float32";
    case Dtype::Float64: return "float64";
    case Dtype::Float16: return "float16";
    case Dtype::BFloat16: return "bfloat16";
    case Dtype::Float8_e4m3fn: return "float8_e4m3fn";
    case Dtype::Float8_e5m2: return "float8_e5m2";
    case Dtype::Int32: return "int32";
    case Dtype::Int64: return "int64";
    case Dtype::UInt8: return "uint8";
    case Dtype::Bool: return "bool";
  }
  return "unknown";
}

Dtype promote_types(Dtype a, Dtype b) {
  if (a == b) return a;
  TALLY_CHECK_TYPE_ERROR(!is_float8(a) && !is_float8(b), "Promotion for Float8 Types is not supported, attempted to promote ",
                         dtype_name(a), " and ", dtype_name(b));
  if (a == Dtype::Bool) return b;
  if (b == Dtype::Bool) return a;
  const bool fa = is_floating_point(a), fb = is_floating_point(b);
  if (fa != fb) return fa ? a : b;  // floating wins over integral
  if (fa) {
    // float16 with bfloat16 has no common 16-bit type: both fit float32.
    if (a == Dtype::Float64 || b == Dtype::Float64) return Dtype::Float64;
    return Dtype::Float32;
  }
  // Integral: uint8 < int32 < int64 (uint8 with any signed type is that signed type here).
  auto rank = [](Dtype d) { return d == Dtype::UInt8 ? 0 : d == Dtype::Int32 ? 1 : 2; };
  return rank(a) > rank(b) ? a : b;
}

}  // namespace tally
