#pragma once
// The scalar rule of every unary op in tally/table/unary_ops.h, one `<Name>Math` struct per row,
// compiled for the CPU (ops/unary.cpp's kernels) and for the GPU (kernels/cuda/elementwise.cu)
// from this one text, so both devices compute the same expression. Each struct has:
//   - `input`: which dtypes the op takes and what it computes them in (PyTorch's rules);
//   - `f<C>(x)`: the value for one element in its compute type C (float for the 16- and 8-bit
//     floats, the type itself otherwise).
// Plain C++ and <cmath> only: nvcc reads this without the library's headers.

#include <cmath>
#include <type_traits>

#ifdef __CUDACC__
#define TALLY_HOST_DEVICE __host__ __device__ __forceinline__
#else
#define TALLY_HOST_DEVICE inline
#endif

namespace tally::kernels {

/// Which input dtypes an op takes, and the dtype of its result (PyTorch's rules).
enum class InputRule {
  Any,         // every arithmetic dtype, result of the input's dtype
  Negatable,   // as Any, but bool is refused (neg)
  NoBool,      // as Any, but bool is refused with "not implemented for 'Bool'" (abs, relu)
  IntToFloat,  // integers and bool compute in float32 (exp, log, ...)
  FloatOnly,   // floating dtypes only (gelu, silu)
  BoolToLong,  // bool becomes int64 (square, which PyTorch computes as pow(x, 2))
};

/// The many ops that take every dtype, computing integers in floating point, with a one-line rule.
#define TALLY_INT_TO_FLOAT_MATH(Name, expr)                           \
  struct Name##Math {                                                \
    static constexpr InputRule input = InputRule::IntToFloat;        \
    template <class C> TALLY_HOST_DEVICE static C f(C x) { return expr; } \
  };

template <class C> TALLY_HOST_DEVICE C sigmoid_of(C x) { return C(1) / (C(1) + std::exp(-x)); }
/// Φ(x) = ½(1 + erf(x/√2)), the standard normal CDF (exact GELU is x·Φ(x)).
template <class C> TALLY_HOST_DEVICE C normal_cdf(C x) { return C(0.5) * (C(1) + std::erf(x * C(M_SQRT1_2))); }

struct NegMath {
  static constexpr InputRule input = InputRule::Negatable;
  template <class C> TALLY_HOST_DEVICE static C f(C x) { return static_cast<C>(-x); }
};
struct AbsMath {
  static constexpr InputRule input = InputRule::NoBool;
  template <class C> TALLY_HOST_DEVICE static C f(C x) {
    if constexpr (std::is_unsigned_v<C> || std::is_same_v<C, bool>) return x;
    else if constexpr (std::is_floating_point_v<C>) return std::fabs(x);  // |−0| is +0 (x < 0 is false for −0)
    else return x < 0 ? static_cast<C>(-x) : x;
  }
};
TALLY_INT_TO_FLOAT_MATH(Sqrt, std::sqrt(x))
// A correctly rounded root and quotient on both devices (CUDA's rsqrtf is approximate).
TALLY_INT_TO_FLOAT_MATH(Rsqrt, C(1) / std::sqrt(x))
TALLY_INT_TO_FLOAT_MATH(Exp, std::exp(x))
TALLY_INT_TO_FLOAT_MATH(Log, std::log(x))
TALLY_INT_TO_FLOAT_MATH(Tanh, std::tanh(x))
TALLY_INT_TO_FLOAT_MATH(Sigmoid, sigmoid_of(x))
struct SiluMath {
  static constexpr InputRule input = InputRule::FloatOnly;
  template <class C> TALLY_HOST_DEVICE static C f(C x) { return x * sigmoid_of(x); }
};
TALLY_INT_TO_FLOAT_MATH(Erf, std::erf(x))
struct ReluMath {
  static constexpr InputRule input = InputRule::NoBool;
  template <class C> TALLY_HOST_DEVICE static C f(C x) {
    if constexpr (std::is_floating_point_v<C>) {
      if (std::isnan(x)) return x;
    }
    return x > C(0) ? x : C(0);
  }
};
struct SquareMath {
  static constexpr InputRule input = InputRule::BoolToLong;
  template <class C> TALLY_HOST_DEVICE static C f(C x) { return static_cast<C>(x * x); }
};
struct SoftplusMath {
  static constexpr InputRule input = InputRule::FloatOnly;
  // ln(1 + eˣ), and x itself above 20 where that is x to within rounding (PyTorch's threshold).
  template <class C> TALLY_HOST_DEVICE static C f(C x) { return x > C(20) ? x : std::log1p(std::exp(x)); }
};
TALLY_INT_TO_FLOAT_MATH(Log1p, std::log1p(x))
TALLY_INT_TO_FLOAT_MATH(Expm1, std::expm1(x))
TALLY_INT_TO_FLOAT_MATH(Log2, std::log2(x))
TALLY_INT_TO_FLOAT_MATH(Log10, std::log10(x))
TALLY_INT_TO_FLOAT_MATH(Reciprocal, C(1) / x)
TALLY_INT_TO_FLOAT_MATH(Sin, std::sin(x))
TALLY_INT_TO_FLOAT_MATH(Cos, std::cos(x))

/// Rounding to a whole number: integers are whole already and come back as they are (PyTorch
/// takes every dtype but bool).
template <class Rule>
struct WholeNumberMath {
  static constexpr InputRule input = InputRule::NoBool;
  template <class C> TALLY_HOST_DEVICE static C f(C x) {
    if constexpr (std::is_floating_point_v<C>) return Rule::whole(x);
    else return x;
  }
};
struct FloorRule {
  template <class C> TALLY_HOST_DEVICE static C whole(C x) { return std::floor(x); }
};
struct CeilRule {
  template <class C> TALLY_HOST_DEVICE static C whole(C x) { return std::ceil(x); }
};
struct RoundRule {  // halves to even, as torch.round (nearbyint in the default rounding mode)
  template <class C> TALLY_HOST_DEVICE static C whole(C x) { return std::nearbyint(x); }
};
struct TruncRule {
  template <class C> TALLY_HOST_DEVICE static C whole(C x) { return std::trunc(x); }
};
using FloorMath = WholeNumberMath<FloorRule>;
using CeilMath = WholeNumberMath<CeilRule>;
using RoundMath = WholeNumberMath<RoundRule>;
using TruncMath = WholeNumberMath<TruncRule>;

struct SignMath {
  static constexpr InputRule input = InputRule::Any;
  // (0 < x) − (x < 0), as PyTorch's: 0 for ±0 and for NaN; a bool is its own sign.
  template <class C> TALLY_HOST_DEVICE static C f(C x) {
    if constexpr (std::is_same_v<C, bool>) return x;
    else if constexpr (std::is_unsigned_v<C>) return static_cast<C>(x != C(0));
    else return static_cast<C>(static_cast<int>(C(0) < x) - static_cast<int>(x < C(0)));
  }
};
// torch.logit without eps: 1 gives +inf, 0 gives −inf, outside [0, 1] NaN, as ln of x/(1 − x).
TALLY_INT_TO_FLOAT_MATH(Logit, std::log(x / (C(1) - x)))

// GELU's two forms: one op (`gelu(x, approximate)`), so not a row of the table.
struct GeluErfMath {
  static constexpr InputRule input = InputRule::FloatOnly;
  template <class C> TALLY_HOST_DEVICE static C f(C x) { return x * normal_cdf(x); }
};
struct GeluTanhMath {
  static constexpr InputRule input = InputRule::FloatOnly;
  template <class C> TALLY_HOST_DEVICE static C f(C x) {
    const C inner = C(0.7978845608028654) * (x + C(0.044715) * x * x * x);
    return C(0.5) * x * (C(1) + std::tanh(inner));
  }
};

}  // namespace tally::kernels
