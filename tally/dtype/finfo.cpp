#include "tally/dtype/finfo.h"

#include <cmath>

namespace tally {

namespace {
// Every binary floating format is fixed by its exponent and mantissa widths, its bias, and what it
// does with the top exponent. Deriving the limits from that (rather than typing decimal literals)
// keeps them exact and makes the fp8 entries as trustworthy as the IEEE ones.
struct Format {
  int bits;
  int mant_bits;
  int bias;
  int max_exp;         // unbiased exponent of the largest finite value
  int max_mant_drop;   // how many top mantissa codes at max_exp are not finite (e4m3fn: NaN takes 1)
  int digits10;        // std::numeric_limits<T>::digits10, which torch turns into `resolution`
};

FInfo from_format(const Format& f, Dtype d) {
  const double ulp_at_one = std::ldexp(1.0, -f.mant_bits);
  // The largest significand is 2 - ulp, less one more ulp per top code given to NaN.
  const double max = std::ldexp(2.0 - (1 + f.max_mant_drop) * ulp_at_one, f.max_exp);
  const double smallest_normal = std::ldexp(1.0, 1 - f.bias);
  FInfo info{};
  info.bits = f.bits;
  info.max = max;
  info.min = -max;
  info.eps = ulp_at_one;
  info.tiny = smallest_normal;
  info.smallest_normal = smallest_normal;
  info.smallest_subnormal = std::ldexp(1.0, 1 - f.bias - f.mant_bits);
  info.resolution = std::pow(10.0, -f.digits10);
  info.dtype = d;
  return info;
}
}  // namespace

FInfo finfo(Dtype d) {
  switch (d) {
    // IEEE formats: the top exponent is reserved for inf/NaN, so max_exp = bias.
    case Dtype::Float32: return from_format({32, 23, 127, 127, 0, 6}, d);
    case Dtype::Float64: return from_format({64, 52, 1023, 1023, 0, 15}, d);
    case Dtype::Float16: return from_format({16, 10, 15, 15, 0, 3}, d);
    case Dtype::BFloat16: return from_format({16, 7, 127, 127, 0, 2}, d);
    // e4m3fn keeps the top exponent for finite values and gives only S.1111.111 to NaN:
    // max = 1.110b * 2^8 = 448. c10 declares digits10 = 0 for both fp8 types, so resolution is 1.
    case Dtype::Float8_e4m3fn: return from_format({8, 3, 7, 8, 1, 0}, d);
    case Dtype::Float8_e5m2: return from_format({8, 2, 15, 15, 0, 0}, d);
    default: break;
  }
  throw TypeError(detail::str_cat("torch.finfo() requires a floating point input type. Use torch.iinfo to handle 'torch.",
                                  dtype_name(d), "'"));
}

}  // namespace tally
