#pragma once
// A number passed to an op (`x * 2`, `x.fill_(1.5)`), remembering whether it was written as a
// bool, an integer or a floating-point value: type promotion depends on it, as in PyTorch.

#include <cstdint>
#include <string_view>
#include <type_traits>

#include "tally/dtype/dtype.h"

namespace tally {

/// A dtype-less number: bool, integer or floating.
class Scalar {
 public:
  enum class Kind : uint8_t { Bool, Int, Float };
  Scalar() : Scalar(int64_t{0}) {}
  template <class T, std::enable_if_t<std::is_arithmetic_v<T>, int> = 0>
  Scalar(T v) {  // NOLINT: implicit like c10::Scalar
    if constexpr (std::is_same_v<T, bool>) { kind_ = Kind::Bool; i_ = v; d_ = v; }
    else if constexpr (std::is_integral_v<T>) { kind_ = Kind::Int; i_ = static_cast<int64_t>(v); d_ = static_cast<double>(v); }
    else { kind_ = Kind::Float; d_ = static_cast<double>(v); i_ = static_cast<int64_t>(v); }
  }
  Scalar(Half v) : Scalar(static_cast<float>(v)) {}       // NOLINT
  Scalar(BFloat16 v) : Scalar(static_cast<float>(v)) {}   // NOLINT

  Kind kind() const { return kind_; }
  bool is_floating_point() const { return kind_ == Kind::Float; }
  double to_double() const { return d_; }
  int64_t to_long() const { return i_; }
  /// The value as element type T (integers exactly, floats rounded once).
  template <class T> T to() const {
    if constexpr (std::is_integral_v<T>) return kind_ == Kind::Float ? static_cast<T>(d_) : static_cast<T>(i_);
    else return cast_to<T>(d_);
  }
  /// The dtype PyTorch gives a tensor made from this number: bool, int64 or float32.
  Dtype natural_dtype() const { return kind_ == Kind::Bool ? kBool : kind_ == Kind::Int ? kInt64 : get_default_dtype(); }

 private:
  Kind kind_;
  int64_t i_ = 0;
  double d_ = 0;
};

/// Raises ValueError when `value` lies outside `dtype`'s range, as PyTorch's checked conversion of
/// a number written into a tensor (fill_, full, masked_fill, clamp's bounds): for an integer type
/// its range, where an unsigned type also takes a negative value down to -max, which wraps (uint8
/// takes -1 as 255, as PyTorch does); for a floating type its finite range, an infinity or NaN
/// being kept. `op` names the caller. A number in arithmetic (`x + 300` on uint8) is not checked:
/// PyTorch wraps it too.
void check_scalar_fits(Scalar value, Dtype dtype, std::string_view op);

}  // namespace tally
