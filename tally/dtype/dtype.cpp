#include "tally/dtype/dtype.h"

#include <atomic>
#include <cctype>
#include <string>

namespace tally {

void detail::throw_unknown_dtype(std::string_view op, Dtype d) {
  throw TypeError(detail::str_cat(op, ": unknown dtype ", static_cast<int>(d)));
}

std::string_view dtype_name(Dtype d) {
  switch (d) {
#define TALLY_DTYPE_NAME_(Name, torch_name, bytes, ...) \
  case Dtype::Name: return torch_name;
    TALLY_FORALL_DTYPES(TALLY_DTYPE_NAME_)
#undef TALLY_DTYPE_NAME_
  }
  return "unknown";
}

namespace {
std::atomic<Dtype> default_dtype{Dtype::Float32};
}  // namespace

Dtype get_default_dtype() { return default_dtype.load(std::memory_order_relaxed); }

void set_default_dtype(Dtype dtype) {
  TALLY_CHECK_TYPE_ERROR(is_floating_point(dtype) && !is_float8(dtype), "only floating-point types are supported as the default "
                         "type (float32, float64, float16, bfloat16), got ", dtype_name(dtype));
  default_dtype.store(dtype, std::memory_order_relaxed);
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
  // Integral: the signed types rank by width; uint8 with int8 needs int16 to hold both ranges,
  // and with a wider signed type is that type.
  if (a == Dtype::UInt8 || b == Dtype::UInt8) {
    const Dtype other = a == Dtype::UInt8 ? b : a;
    return other == Dtype::Int8 ? Dtype::Int16 : other;
  }
  return element_size(a) > element_size(b) ? a : b;
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
      {"char", kInt8},     {"short", kInt16},
      {"e4m3", kFloat8_e4m3fn}, {"fp8", kFloat8_e4m3fn}, {"e5m2", kFloat8_e5m2}};
  for (const auto& [alias, dt] : aliases)
    if (key == alias) return dt;
  std::string names, alias_names;
  for (int i = 0; i < kNumDtypes; ++i) names += (i ? ", " : "") + std::string(dtype_name(static_cast<Dtype>(i)));
  for (const auto& [alias, dt] : aliases) alias_names += (alias_names.empty() ? "" : ", ") + std::string(alias);
  throw ValueError(detail::str_cat("unknown dtype '", name, "'; known dtypes: ", names, " (aliases: ", alias_names, ")"));
}

}  // namespace tally
