#include "tally/dtype/dtype.h"

#include <cctype>
#include <string>

namespace tally {

void detail::throw_unknown_dtype(std::string_view op, Dtype d) {
  throw TypeError(detail::str_cat(op, ": unknown dtype ", static_cast<int>(d)));
}

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

Dtype dtype_from_name(std::string_view name) {
  std::string key(name);
  for (char& c : key) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  if (key.rfind("torch.", 0) == 0) key = key.substr(6);
  for (int i = 0; i < kNumDtypes; ++i)
    if (dtype_name(static_cast<Dtype>(i)) == key) return static_cast<Dtype>(i);
  // PyTorch's own aliases (torch.float, torch.half, ...) and the short names of the hardware world.
  static const std::pair<const char*, Dtype> aliases[] = {
      {"float", kFloat32}, {"fp32", kFloat32},  {"double", kFloat64}, {"fp64", kFloat64},   {"half", kFloat16},
      {"fp16", kFloat16},  {"bf16", kBFloat16}, {"int", kInt32},      {"long", kInt64},     {"byte", kUInt8},
      {"e4m3", kFloat8_e4m3fn}, {"fp8", kFloat8_e4m3fn}, {"e5m2", kFloat8_e5m2}};
  for (const auto& [alias, dt] : aliases)
    if (key == alias) return dt;
  std::string names;
  for (int i = 0; i < kNumDtypes; ++i) names += (i ? ", " : "") + std::string(dtype_name(static_cast<Dtype>(i)));
  throw ValueError(detail::str_cat("unknown dtype '", name, "'; known dtypes: ", names,
                                   " (aliases: float, fp32, double, half, fp16, bf16, int, long, byte, fp8, e4m3, e5m2)"));
}

}  // namespace tally
