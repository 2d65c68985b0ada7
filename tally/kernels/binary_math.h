#pragma once
// The scalar rule of every binary op in tally/table/binary_ops.h, and of add and sub, one
// `<Name>Math` struct each, compiled for the CPU (ops/binary.cpp's kernels) and for the GPU
// (kernels/cuda/elementwise.cu) from this one text, as kernels/unary_math.h does for the unary
// ops. Each struct has:
//   - `rule`: the dtype the op computes in and returns (PyTorch's rules);
//   - `f<C>(a, b)`: the value for one pair of elements in their compute type C (float for the
//     16- and 8-bit floats, the type itself otherwise); bool for a comparison.
// Plain C++ and <cmath> only: nvcc reads this without the library's headers.

#include <cmath>
#include <type_traits>

#include "tally/kernels/unary_math.h"  // TALLY_HOST_DEVICE

namespace tally::kernels {

/// The dtype a binary op computes in and returns.
enum class BinaryRule {
  Promote,         // the operands' promoted dtype, for both
  PromoteToFloat,  // as Promote, but integers and bool compute in the default float dtype (div)
  Compare,         // computes in the promoted dtype, returns bool
};

struct AddMath {
  static constexpr BinaryRule rule = BinaryRule::Promote;
  template <class C> TALLY_HOST_DEVICE static C f(C a, C b) { return static_cast<C>(a + b); }
};
struct SubMath {
  static constexpr BinaryRule rule = BinaryRule::Promote;
  template <class C> TALLY_HOST_DEVICE static C f(C a, C b) { return static_cast<C>(a - b); }
};
struct MulMath {
  static constexpr BinaryRule rule = BinaryRule::Promote;
  template <class C> TALLY_HOST_DEVICE static C f(C a, C b) {
    if constexpr (std::is_same_v<C, bool>) return a && b;
    else return static_cast<C>(a * b);
  }
};
struct DivMath {
  static constexpr BinaryRule rule = BinaryRule::PromoteToFloat;
  template <class C> TALLY_HOST_DEVICE static C f(C a, C b) { return a / b; }
};
/// An integer to an integer power, by squaring. A negative exponent (a tensor's; the op layer
/// refuses a number's) gives 1 for a base of 1, ±1 for −1, else 0, as PyTorch's integer pow.
template <class C, class E>
TALLY_HOST_DEVICE C int_pow(C base, E e) {
  if constexpr (std::is_signed_v<E>)
    if (e < 0) return base == 1 ? C(1) : base == C(-1) ? C(e % 2 == 0 ? 1 : -1) : C(0);
  C result = 1;
  for (; e > 0; e >>= 1) {
    if (e & 1) result = static_cast<C>(result * base);
    base = static_cast<C>(base * base);
  }
  return result;
}
struct PowMath {
  static constexpr BinaryRule rule = BinaryRule::Promote;
  template <class C> TALLY_HOST_DEVICE static C f(C a, C b) {
    if constexpr (std::is_same_v<C, bool>) return a || !b;
    else if constexpr (std::is_integral_v<C>) return int_pow(a, b);
    else return std::pow(a, b);
  }
};
/// The larger or smaller of two values; NaN propagates (a NaN operand makes the sum NaN).
template <bool kLarger>
struct ExtremumMath {
  static constexpr BinaryRule rule = BinaryRule::Promote;
  template <class C> TALLY_HOST_DEVICE static C f(C a, C b) {
    if constexpr (std::is_floating_point_v<C>) {
      if (std::isnan(a) || std::isnan(b)) return a + b;
    }
    if constexpr (kLarger) return a > b ? a : b;
    else return a < b ? a : b;
  }
};
using MaximumMath = ExtremumMath<true>;
using MinimumMath = ExtremumMath<false>;

#define TALLY_COMPARISON_MATH(Name, expr)                                         \
  struct Name##Math {                                                             \
    static constexpr BinaryRule rule = BinaryRule::Compare;                       \
    template <class C> TALLY_HOST_DEVICE static bool f(C a, C b) { return expr; } \
  };
TALLY_COMPARISON_MATH(Eq, a == b)
TALLY_COMPARISON_MATH(Ne, a != b)
TALLY_COMPARISON_MATH(Lt, a < b)
TALLY_COMPARISON_MATH(Le, a <= b)
TALLY_COMPARISON_MATH(Gt, a > b)
TALLY_COMPARISON_MATH(Ge, a >= b)
#undef TALLY_COMPARISON_MATH

}  // namespace tally::kernels
