#include "tally/core/scalar.h"

#include <cmath>
#include <limits>
#include <string>

#include "tally/dtype/finfo.h"
#include "tally/error/error.h"

namespace tally {

namespace {

/// Whether `v` (a number written as an integer) lies outside integer type T's range.
template <class T>
bool overflows_integer(int64_t v) {
  if constexpr (std::is_same_v<T, int64_t>) return false;
  else if constexpr (std::is_unsigned_v<T>) return v > std::numeric_limits<T>::max() || v < -static_cast<int64_t>(std::numeric_limits<T>::max());
  else return v < std::numeric_limits<T>::min() || v > std::numeric_limits<T>::max();
}

/// The same for a number written as a float, by c10's overflows(): NaN and the infinities have
/// no integer value, and floats get no leniency for negatives into an unsigned type (-1.0 into
/// uint8 raises, as in torch). 2^63 is refused too, where c10's max() rounds to it in double.
template <class T>
bool overflows_integer(double v) {
  if (!std::isfinite(v)) return true;
  const double beyond = std::ldexp(1.0, std::numeric_limits<T>::digits);  // max + 1, exactly
  return v < static_cast<double>(std::numeric_limits<T>::lowest()) || v > static_cast<double>(std::numeric_limits<T>::max()) ||
         v >= beyond;
}

}  // namespace

void check_scalar_fits(Scalar value, Dtype dtype, std::string_view op) {
  if (dtype == kBool) return;  // every number is true or false
  bool overflow = false;
  if (is_floating_point(dtype)) {
    const double v = value.to_double(), max = finfo(dtype).max;
    overflow = std::isfinite(v) && (v > max || v < -max);
  } else {
    dispatch(dtype, op, [&]<class T>() {
      if constexpr (std::is_integral_v<T> && !std::is_same_v<T, bool>) {
        overflow = value.is_floating_point() ? overflows_integer<T>(value.to_double()) : overflows_integer<T>(value.to_long());
      }
    });
  }
  if (overflow) {
    const std::string text = value.is_floating_point() ? detail::str_cat(value.to_double()) : std::to_string(value.to_long());
    throw ValueError(detail::str_cat(op, ": value ", text, " cannot be converted to type ", dtype_name(dtype), " without overflow"));
  }
}

}  // namespace tally
