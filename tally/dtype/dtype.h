#pragma once
// The dtypes tally stores, their C++ element types, promotion and dispatch.

#include <cstdint>
#include <string>
#include <ostream>
#include <string_view>
#include <type_traits>

#include "tally/dtype/float8.h"
#include "tally/dtype/half.h"
#include "tally/error/error.h"

namespace tally {

/// Element type of a tensor (libtorch: c10::ScalarType).
enum class Dtype : uint8_t {
  Float32, Float64, Float16, BFloat16, Float8_e4m3fn, Float8_e5m2, Int32, Int64, UInt8, Bool,
};
inline constexpr int kNumDtypes = 10;

inline constexpr Dtype kFloat32 = Dtype::Float32, kFloat = Dtype::Float32;
inline constexpr Dtype kFloat64 = Dtype::Float64, kDouble = Dtype::Float64;
inline constexpr Dtype kFloat16 = Dtype::Float16, kHalf = Dtype::Float16;
inline constexpr Dtype kBFloat16 = Dtype::BFloat16;
inline constexpr Dtype kFloat8_e4m3fn = Dtype::Float8_e4m3fn;
inline constexpr Dtype kFloat8_e5m2 = Dtype::Float8_e5m2;
inline constexpr Dtype kInt32 = Dtype::Int32, kInt = Dtype::Int32;
inline constexpr Dtype kInt64 = Dtype::Int64, kLong = Dtype::Int64;
inline constexpr Dtype kUInt8 = Dtype::UInt8, kByte = Dtype::UInt8;
inline constexpr Dtype kBool = Dtype::Bool;

/// Bytes per element.
constexpr int64_t element_size(Dtype d) {
  switch (d) {
    case Dtype::Float64: case Dtype::Int64: return 8;
    case Dtype::Float32: case Dtype::Int32: return 4;
    case Dtype::Float16: case Dtype::BFloat16: return 2;
    default: return 1;
  }
}
/// True for the six floating-point dtypes.
constexpr bool is_floating_point(Dtype d) { return d <= Dtype::Float8_e5m2; }
/// True for the 8-bit floats, which PyTorch refuses to promote implicitly.
constexpr bool is_float8(Dtype d) { return d == Dtype::Float8_e4m3fn || d == Dtype::Float8_e5m2; }
/// True for int32, int64 and uint8 (not bool).
constexpr bool is_integral(Dtype d) { return d == Dtype::Int32 || d == Dtype::Int64 || d == Dtype::UInt8; }

/// PyTorch's name: "float32", "bfloat16", "float8_e4m3fn", ...
std::string_view dtype_name(Dtype d);
/// The dtype with PyTorch's name ("float32", "torch.bfloat16", ...) or a common alias ("fp32",
/// "bf16", "half", "float", "long"), case-insensitive; ValueError lists the names for an unknown one.
Dtype dtype_from_name(std::string_view name);
inline std::ostream& operator<<(std::ostream& os, Dtype d) { return os << "torch." << dtype_name(d); }

/// The dtype both operands are computed in (torch.promote_types). Raises TypeError for float8
/// mixed with another dtype, as PyTorch does: scaling must be explicit.
Dtype promote_types(Dtype a, Dtype b);

/// The C++ element type stored for a dtype, and back.
template <Dtype D> struct dtype_cpp;
template <> struct dtype_cpp<Dtype::Float32> { using type = float; };
template <> struct dtype_cpp<Dtype::Float64> { using type = double; };
template <> struct dtype_cpp<Dtype::Float16> { using type = Half; };
template <> struct dtype_cpp<Dtype::BFloat16> { using type = BFloat16; };
template <> struct dtype_cpp<Dtype::Float8_e4m3fn> { using type = Float8_e4m3fn; };
template <> struct dtype_cpp<Dtype::Float8_e5m2> { using type = Float8_e5m2; };
template <> struct dtype_cpp<Dtype::Int32> { using type = int32_t; };
template <> struct dtype_cpp<Dtype::Int64> { using type = int64_t; };
template <> struct dtype_cpp<Dtype::UInt8> { using type = uint8_t; };
template <> struct dtype_cpp<Dtype::Bool> { using type = bool; };

template <class T> constexpr Dtype dtype_of();
template <> constexpr Dtype dtype_of<float>() { return Dtype::Float32; }
template <> constexpr Dtype dtype_of<double>() { return Dtype::Float64; }
template <> constexpr Dtype dtype_of<Half>() { return Dtype::Float16; }
template <> constexpr Dtype dtype_of<BFloat16>() { return Dtype::BFloat16; }
template <> constexpr Dtype dtype_of<Float8_e4m3fn>() { return Dtype::Float8_e4m3fn; }
template <> constexpr Dtype dtype_of<Float8_e5m2>() { return Dtype::Float8_e5m2; }
template <> constexpr Dtype dtype_of<int32_t>() { return Dtype::Int32; }
template <> constexpr Dtype dtype_of<int64_t>() { return Dtype::Int64; }
template <> constexpr Dtype dtype_of<uint8_t>() { return Dtype::UInt8; }
template <> constexpr Dtype dtype_of<bool>() { return Dtype::Bool; }

/// The type arithmetic on T is carried out in: reduced-precision floats compute in float32.
template <class T> struct compute_type { using type = T; };
template <> struct compute_type<Half> { using type = float; };
template <> struct compute_type<BFloat16> { using type = float; };
template <> struct compute_type<Float8_e4m3fn> { using type = float; };
template <> struct compute_type<Float8_e5m2> { using type = float; };
template <class T> using compute_t = typename compute_type<T>::type;

/// True for the 16- and 8-bit float storage types, which convert through float.
template <class T>
inline constexpr bool is_narrow_float_v = std::is_same_v<T, Half> || std::is_same_v<T, BFloat16> ||
                                          std::is_same_v<T, Float8_e4m3fn> || std::is_same_v<T, Float8_e5m2>;

/// Convert a compute value to a storage type (round to nearest even for the narrow floats).
/// To bool it is v != 0 in v's own type, so a double too small for float (1e-50) stays true, as
/// in PyTorch; the narrow floats compare through float, which holds them exactly.
/// Always inline, as the storage types' conversions are (half.h).
template <class T, class V>
[[gnu::always_inline]] inline T cast_to(V v) {
  if constexpr (std::is_same_v<T, bool>) {
    if constexpr (is_narrow_float_v<V>) return static_cast<float>(v) != 0.0f;
    else return v != V(0);
  } else if constexpr (is_narrow_float_v<T>) {
    return T(static_cast<float>(v));
  } else if constexpr (is_narrow_float_v<V>) {
    return static_cast<T>(static_cast<float>(v));
  } else {
    return static_cast<T>(v);
  }
}

namespace detail {
/// The error of dispatch() for a value outside the enum. Out of line, so that the CPU kernels'
/// per-target builds, which dispatch too, emit no message-formatting code of their own (Note
/// [CPU kernel dispatch] in kernels/cpu/dispatch.h).
[[noreturn]] void throw_unknown_dtype(std::string_view op, Dtype d);
}  // namespace detail

/// Call `fn.template operator()<T>()` with T the element type of `d`; `op` names the caller in
/// the error raised for a dtype outside the chosen set.
template <class Fn>
decltype(auto) dispatch(Dtype d, std::string_view op, Fn&& fn) {
  switch (d) {
    case Dtype::Float32: return fn.template operator()<float>();
    case Dtype::Float64: return fn.template operator()<double>();
    case Dtype::Float16: return fn.template operator()<Half>();
    case Dtype::BFloat16: return fn.template operator()<BFloat16>();
    case Dtype::Float8_e4m3fn: return fn.template operator()<Float8_e4m3fn>();
    case Dtype::Float8_e5m2: return fn.template operator()<Float8_e5m2>();
    case Dtype::Int32: return fn.template operator()<int32_t>();
    case Dtype::Int64: return fn.template operator()<int64_t>();
    case Dtype::UInt8: return fn.template operator()<uint8_t>();
    case Dtype::Bool: return fn.template operator()<bool>();
  }
  detail::throw_unknown_dtype(op, d);
}

/// Raises TypeError for a dtype arithmetic does not take: float8 (PyTorch, too, only converts
/// float8 and leaves arithmetic to scaled matmuls). Ops call it before choosing a device's kernel.
inline void check_arith(Dtype d, std::string_view op) {
  TALLY_CHECK_TYPE_ERROR(!is_float8(d), "\"", op, "\" not implemented for '", dtype_name(d),
                         "': convert float8 tensors with .to() first");
}

/// As dispatch, for the dtypes arithmetic kernels support (check_arith).
template <class Fn>
decltype(auto) dispatch_arith(Dtype d, std::string_view op, Fn&& fn) {
  check_arith(d, op);
  return dispatch(d, op, std::forward<Fn>(fn));
}

/// As dispatch, for floating dtypes (float8 excluded).
template <class Fn>
decltype(auto) dispatch_floating(Dtype d, std::string_view op, Fn&& fn) {
  TALLY_CHECK_TYPE_ERROR(is_floating_point(d) && !is_float8(d), "\"", op, "\" not implemented for '",
                         dtype_name(d), "'");
  return dispatch(d, op, std::forward<Fn>(fn));
}

}  // namespace tally
