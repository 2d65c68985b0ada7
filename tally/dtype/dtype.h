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
#include "tally/table/dtypes.h"

namespace tally {

/// Element type of a tensor (libtorch: c10::ScalarType).
/// Its enumerators, names and sizes are the rows of tally/table/dtypes.h, which the CUDA kernels
/// read too.
#define TALLY_DTYPE_ENUMERATOR_(Name, torch_name, bytes, ...) Name,
enum class Dtype : uint8_t { TALLY_FORALL_DTYPES(TALLY_DTYPE_ENUMERATOR_) };
#undef TALLY_DTYPE_ENUMERATOR_
inline constexpr int kNumDtypes = kDtypeRows;
// The predicates below rely on this order: the floats first, the integers, bool last.
static_assert(static_cast<int>(Dtype::Float8_e5m2) == 5 && static_cast<int>(Dtype::Bool) == kNumDtypes - 1,
              "tally/table/dtypes.h: floating dtypes first, then the integers, bool last");

inline constexpr Dtype kFloat32 = Dtype::Float32, kFloat = Dtype::Float32;
inline constexpr Dtype kFloat64 = Dtype::Float64, kDouble = Dtype::Float64;
inline constexpr Dtype kFloat16 = Dtype::Float16, kHalf = Dtype::Float16;
inline constexpr Dtype kBFloat16 = Dtype::BFloat16;
inline constexpr Dtype kFloat8_e4m3fn = Dtype::Float8_e4m3fn;
inline constexpr Dtype kFloat8_e5m2 = Dtype::Float8_e5m2;
inline constexpr Dtype kInt32 = Dtype::Int32, kInt = Dtype::Int32;
inline constexpr Dtype kInt64 = Dtype::Int64, kLong = Dtype::Int64;
inline constexpr Dtype kUInt8 = Dtype::UInt8, kByte = Dtype::UInt8;
inline constexpr Dtype kInt8 = Dtype::Int8, kChar = Dtype::Int8;
inline constexpr Dtype kInt16 = Dtype::Int16, kShort = Dtype::Int16;
inline constexpr Dtype kBool = Dtype::Bool;

/// Bytes per element.
constexpr int64_t element_size(Dtype d) {
  switch (d) {
#define TALLY_DTYPE_SIZE_(Name, torch_name, bytes, ...) \
  case Dtype::Name: return bytes;
    TALLY_FORALL_DTYPES(TALLY_DTYPE_SIZE_)
#undef TALLY_DTYPE_SIZE_
  }
  return 1;
}
/// True for the six floating-point dtypes.
constexpr bool is_floating_point(Dtype d) { return d <= Dtype::Float8_e5m2; }
/// True for the 8-bit floats, which PyTorch refuses to promote implicitly.
constexpr bool is_float8(Dtype d) { return d == Dtype::Float8_e4m3fn || d == Dtype::Float8_e5m2; }
/// True for the integer dtypes: int8, int16, int32, int64 and uint8 (not bool).
constexpr bool is_integral(Dtype d) { return !is_floating_point(d) && d != Dtype::Bool; }

/// PyTorch's name: "float32", "bfloat16", "float8_e4m3fn", ...
std::string_view dtype_name(Dtype d);
/// The dtype with PyTorch's name ("float32", "torch.bfloat16", ...) or a common alias ("fp32",
/// "bf16", "half", "float", "long"), case-insensitive; ValueError lists the names for an unknown one.
Dtype dtype_from_name(std::string_view name);
inline std::ostream& operator<<(std::ostream& os, Dtype d) { return os << "torch." << dtype_name(d); }

/// The floating dtype tensors are made in when none is asked for, and that integers become in
/// ops that compute in floating point (exp, true division) and that a floating number joins an
/// op as: float32 at start (torch.get_default_dtype). Process-wide, as PyTorch's.
Dtype get_default_dtype();
/// Sets it (torch.set_default_dtype): float32, float64, float16 or bfloat16; TypeError for
/// another dtype, as PyTorch's "only floating-point types are supported as the default type".
void set_default_dtype(Dtype dtype);

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
template <> struct dtype_cpp<Dtype::Int8> { using type = int8_t; };
template <> struct dtype_cpp<Dtype::Int16> { using type = int16_t; };
template <> struct dtype_cpp<Dtype::Bool> { using type = bool; };

#define TALLY_DTYPE_CPP_CHECK_(Name, torch_name, bytes, ...)                                     \
  static_assert(sizeof(dtype_cpp<Dtype::Name>::type) == (bytes), "tally/table/dtypes.h: the C++ type of " #Name \
                " has another size");
TALLY_FORALL_DTYPES(TALLY_DTYPE_CPP_CHECK_)
#undef TALLY_DTYPE_CPP_CHECK_

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
template <> constexpr Dtype dtype_of<int8_t>() { return Dtype::Int8; }
template <> constexpr Dtype dtype_of<int16_t>() { return Dtype::Int16; }
template <> constexpr Dtype dtype_of<bool>() { return Dtype::Bool; }
#define TALLY_DTYPE_ROUND_TRIP_(Name, torch_name, bytes, ...)                                            \
  static_assert(dtype_of<dtype_cpp<Dtype::Name>::type>() == Dtype::Name, "tally/table/dtypes.h: " #Name \
                " and its C++ type do not map to each other");
TALLY_FORALL_DTYPES(TALLY_DTYPE_ROUND_TRIP_)
#undef TALLY_DTYPE_ROUND_TRIP_

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
    return cast_to<T>(static_cast<float>(v));
  } else if constexpr (std::is_integral_v<T> && sizeof(T) < 4 && std::is_floating_point_v<V>) {
    // A float into an 8- or 16-bit integer truncates, then wraps (300.5 -> int8 44), as in
    // PyTorch: through int64, where the direct conversion is undefined out of range.
    return static_cast<T>(static_cast<int64_t>(v));
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
#define TALLY_DTYPE_DISPATCH_(Name, torch_name, bytes, ...) \
  case Dtype::Name: return fn.template operator()<typename dtype_cpp<Dtype::Name>::type>();
    TALLY_FORALL_DTYPES(TALLY_DTYPE_DISPATCH_)
#undef TALLY_DTYPE_DISPATCH_
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
