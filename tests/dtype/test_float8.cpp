// fp8 conversions against a reference written from the format definitions alone: decode every one
// of the 256 codes, and encode a dense sweep of float32 values by searching the decoded table for
// the nearest value (ties to even mantissa), with PyTorch's overflow rules.
#include <gtest/gtest.h>

#include <algorithm>
#include <bit>
#include <cfloat>
#include <cmath>
#include <cstdint>
#include <limits>
#include <sstream>
#include <string>
#include <vector>

#include "tally/dtype/float8.h"
#include "tally/tally.h"

namespace tally {
namespace {

// The definition of a format: field widths, bias, and whether the top exponent is IEEE inf/NaN
// (e5m2) or ordinary finite values with only S.1111.111 as NaN (e4m3fn).
struct Fp8Def {
  int exp_bits;
  int mant_bits;
  int bias;
  bool ieee_specials;
};
constexpr Fp8Def kE4M3fnDef{4, 3, 7, false};
constexpr Fp8Def kE5M2Def{5, 2, 15, true};

double ref_decode(const Fp8Def& d, uint8_t code) {
  const int sign = code >> 7;
  const int exp_field = (code >> d.mant_bits) & ((1 << d.exp_bits) - 1);
  const int mant = code & ((1 << d.mant_bits) - 1);
  const int exp_all_ones = (1 << d.exp_bits) - 1, mant_all_ones = (1 << d.mant_bits) - 1;
  double magnitude;
  if (d.ieee_specials && exp_field == exp_all_ones) {
    magnitude = mant == 0 ? std::numeric_limits<double>::infinity() : std::numeric_limits<double>::quiet_NaN();
  } else if (!d.ieee_specials && exp_field == exp_all_ones && mant == mant_all_ones) {
    magnitude = std::numeric_limits<double>::quiet_NaN();
  } else if (exp_field == 0) {
    magnitude = std::ldexp(static_cast<double>(mant), 1 - d.bias - d.mant_bits);  // subnormal: 0.mmm * 2^(1-bias)
  } else {
    magnitude = std::ldexp(1.0 + std::ldexp(static_cast<double>(mant), -d.mant_bits), exp_field - d.bias);
  }
  return sign ? -magnitude : magnitude;
}

// The positive finite values in code order (they are the codes 0..max_code), plus the value one
// ulp past max: the candidate that, when chosen by rounding, means overflow.
struct RefTable {
  Fp8Def def;
  std::vector<double> values;
  uint8_t max_code;
  double past_max;
};

RefTable make_table(const Fp8Def& d) {
  RefTable t{d, {}, 0, 0.0};
  for (int code = 0; code < 0x80; ++code) {
    const double v = ref_decode(d, static_cast<uint8_t>(code));
    if (!std::isfinite(v)) break;
    t.values.push_back(v);
  }
  t.max_code = static_cast<uint8_t>(t.values.size() - 1);
  const double max = t.values.back();
  t.past_max = max + std::ldexp(1.0, std::ilogb(max) - d.mant_bits);
  return t;
}

constexpr int kExpectNan = -1;

// Nearest representable value by search; returns the expected code or kExpectNan.
int ref_encode(const RefTable& t, float f, bool saturate) {
  if (std::isnan(f)) return kExpectNan;
  const int sign = std::signbit(f) ? 0x80 : 0;
  const int inf_code = ((1 << t.def.exp_bits) - 1) << t.def.mant_bits;
  auto overflow = [&]() -> int {
    if (saturate) return sign | t.max_code;
    return t.def.ieee_specials ? sign | inf_code : kExpectNan;
  };
  const double a = std::fabs(static_cast<double>(f));
  if (a > t.past_max) return overflow();
  // lo = last value <= a; the candidates are lo and the next value up.
  const auto it = std::upper_bound(t.values.begin(), t.values.end(), a);
  const int lo = static_cast<int>(it - t.values.begin()) - 1;
  if (t.values[lo] == a) return sign | lo;
  const int hi = lo + 1;
  const double hi_value = hi > t.max_code ? t.past_max : t.values[hi];
  // Both neighbours have at most 4 significant bits, so their midpoint is exact in double.
  const double mid = (t.values[lo] + hi_value) / 2;
  int chosen;
  if (a < mid) chosen = lo;
  else if (a > mid) chosen = hi;
  else chosen = (lo % 2 == 0) ? lo : hi;  // the mantissa's lowest bit is the code's lowest bit
  if (chosen > t.max_code) return overflow();
  return sign | chosen;
}

std::string describe_code(int code) {
  if (code == kExpectNan) return "NaN";
  std::ostringstream os;
  os << "0x" << std::hex << code;
  return os.str();
}

template <class F8>
uint8_t encode(float f, bool saturate) {
  return saturate ? F8::saturate(f).bits : F8(f).bits;
}

// Compares the header with the reference on one value; returns false (after reporting) on mismatch.
template <class F8>
bool check_encode(const RefTable& t, float f, bool saturate) {
  const int want = ref_encode(t, f, saturate);
  const uint8_t got = encode<F8>(f, saturate);
  const bool ok = want == kExpectNan ? std::isnan(static_cast<float>(F8::from_bits(got))) : got == want;
  if (!ok)
    ADD_FAILURE() << "encode(" << std::hexfloat << f << std::defaultfloat << " = " << f
                  << ", saturate=" << saturate << "): got 0x" << std::hex << int(got) << ", want "
                  << describe_code(want);
  return ok;
}

// Every interesting float: the fp8 values, the midpoints between neighbours (and past max), the
// float32 values just either side of each, specials, and the overflow thresholds by hand.
std::vector<float> edge_values(const RefTable& t) {
  std::vector<double> points(t.values.begin(), t.values.end());
  points.push_back(t.past_max);
  const size_t n_sorted = points.size();
  for (size_t i = 0; i + 1 < n_sorted; ++i) points.push_back((points[i] + points[i + 1]) / 2);
  for (double extra : {448.0, 464.0, 480.0, 496.0, 512.0, 57344.0, 61440.0, 65536.0, 1e6, 1e-10})
    points.push_back(extra);
  std::vector<float> out;
  const float inf = std::numeric_limits<float>::infinity();
  for (double p : points) {
    const float f = static_cast<float>(p);
    for (float v : {f, std::nextafter(f, inf), std::nextafter(f, -inf)}) {
      out.push_back(v);
      out.push_back(-v);
    }
  }
  for (float s : {0.0f, inf, FLT_MAX, FLT_MIN, std::numeric_limits<float>::denorm_min()}) {
    out.push_back(s);
    out.push_back(-s);
  }
  out.push_back(std::numeric_limits<float>::quiet_NaN());
  out.push_back(-std::numeric_limits<float>::quiet_NaN());
  out.push_back(std::numeric_limits<float>::signaling_NaN());
  return out;
}

template <class F8>
void check_decode_all(const Fp8Def& d) {
  int mismatches = 0;
  for (int code = 0; code < 256; ++code) {
    const double want = ref_decode(d, static_cast<uint8_t>(code));
    const float got = F8::from_bits(static_cast<uint8_t>(code));
    const bool ok = std::isnan(want) ? std::isnan(got)
                                     : static_cast<double>(got) == want && std::signbit(got) == std::signbit(want);
    if (!ok && ++mismatches <= 10) ADD_FAILURE() << "decode(0x" << std::hex << code << ") = " << got << ", want " << want;
  }
  EXPECT_EQ(mismatches, 0);
}

template <class F8>
void check_encode_sweep(const RefTable& t) {
  int failures = 0;
  for (float f : edge_values(t))
    for (bool sat : {false, true})
      if (!check_encode<F8>(t, f, sat) && ++failures > 20) return;
  // A strided walk over all 2^32 float32 patterns: 257 is odd, so every mantissa residue and
  // both signs are visited across the exponent range.
  for (uint64_t u = 0; u < (uint64_t{1} << 32); u += 257) {
    const float f = std::bit_cast<float>(static_cast<uint32_t>(u));
    for (bool sat : {false, true})
      if (!check_encode<F8>(t, f, sat) && ++failures > 20) return;
  }
}

TEST(Float8, ReferenceTableMatchesTheFormatDefinition) {
  // Anchor the reference itself to published figures, so a wrong reference cannot pass silently.
  const RefTable e4 = make_table(kE4M3fnDef), e5 = make_table(kE5M2Def);
  EXPECT_EQ(e4.max_code, 0x7E);
  EXPECT_EQ(e4.values.back(), 448.0);
  EXPECT_EQ(e4.past_max, 480.0);
  EXPECT_EQ(e4.values[1], std::ldexp(1.0, -9));
  EXPECT_EQ(e4.values[8], std::ldexp(1.0, -6));
  EXPECT_EQ(e4.values[0x38], 1.0);
  EXPECT_EQ(e4.values[0x39], 1.125);
  EXPECT_EQ(e5.max_code, 0x7B);
  EXPECT_EQ(e5.values.back(), 57344.0);
  EXPECT_EQ(e5.past_max, 65536.0);
  EXPECT_EQ(e5.values[1], std::ldexp(1.0, -16));
  EXPECT_EQ(e5.values[4], std::ldexp(1.0, -14));
  EXPECT_EQ(e5.values[0x3C], 1.0);
  EXPECT_EQ(e5.values[0x3D], 1.25);
  int e4_nans = 0, e5_nans = 0, e5_infs = 0;
  for (int c = 0; c < 256; ++c) {
    e4_nans += std::isnan(ref_decode(kE4M3fnDef, static_cast<uint8_t>(c)));
    e5_nans += std::isnan(ref_decode(kE5M2Def, static_cast<uint8_t>(c)));
    e5_infs += std::isinf(ref_decode(kE5M2Def, static_cast<uint8_t>(c)));
  }
  EXPECT_EQ(e4_nans, 2);
  EXPECT_EQ(e5_nans, 6);
  EXPECT_EQ(e5_infs, 2);
}

TEST(Float8, E4M3fnDecodesAll256Codes) { check_decode_all<Float8_e4m3fn>(kE4M3fnDef); }
TEST(Float8, E5M2DecodesAll256Codes) { check_decode_all<Float8_e5m2>(kE5M2Def); }

TEST(Float8, E4M3fnEncodesLikeReference) { check_encode_sweep<Float8_e4m3fn>(make_table(kE4M3fnDef)); }
TEST(Float8, E5M2EncodesLikeReference) { check_encode_sweep<Float8_e5m2>(make_table(kE5M2Def)); }

TEST(Float8, RoundTripsEveryCode) {
  for (int c = 0; c < 256; ++c) {
    const auto code = static_cast<uint8_t>(c);
    const float a = Float8_e4m3fn::from_bits(code), b = Float8_e5m2::from_bits(code);
    if (!std::isnan(a)) {
      EXPECT_EQ(Float8_e4m3fn(a).bits, code) << std::hex << c;
    }
    if (!std::isnan(b)) {
      EXPECT_EQ(Float8_e5m2(b).bits, code) << std::hex << c;
    }
  }
}

TEST(Float8, OverflowRulesAsPyTorch) {
  // e4m3fn: 464 is the tie between 448 (even mantissa) and 480, so it stays finite; above, NaN.
  EXPECT_EQ(static_cast<float>(Float8_e4m3fn(464.0f)), 448.0f);
  EXPECT_TRUE(std::isnan(static_cast<float>(Float8_e4m3fn(std::nextafter(464.0f, 1e9f)))));
  EXPECT_TRUE(std::isnan(static_cast<float>(Float8_e4m3fn(-1e6f))));
  EXPECT_TRUE(std::isnan(static_cast<float>(Float8_e4m3fn(std::numeric_limits<float>::infinity()))));
  EXPECT_EQ(static_cast<float>(Float8_e4m3fn::saturate(1e6f)), 448.0f);
  EXPECT_EQ(static_cast<float>(Float8_e4m3fn::saturate(-std::numeric_limits<float>::infinity())), -448.0f);
  EXPECT_TRUE(std::isnan(static_cast<float>(Float8_e4m3fn::saturate(std::nanf("")))));
  // e5m2: 61440 is the tie between 57344 (odd mantissa) and 65536 (even): it overflows to inf.
  EXPECT_EQ(static_cast<float>(Float8_e5m2(std::nextafter(61440.0f, 0.0f))), 57344.0f);
  EXPECT_EQ(static_cast<float>(Float8_e5m2(61440.0f)), std::numeric_limits<float>::infinity());
  EXPECT_EQ(static_cast<float>(Float8_e5m2(-1e6f)), -std::numeric_limits<float>::infinity());
  EXPECT_EQ(static_cast<float>(Float8_e5m2::saturate(61440.0f)), 57344.0f);
  EXPECT_EQ(static_cast<float>(Float8_e5m2::saturate(-std::numeric_limits<float>::infinity())), -57344.0f);
  EXPECT_TRUE(std::isnan(static_cast<float>(Float8_e5m2::saturate(std::nanf("")))));
  // Signed zero survives, including underflow of a tiny negative value.
  EXPECT_EQ(Float8_e4m3fn(-0.0f).bits, 0x80);
  EXPECT_EQ(Float8_e5m2(-1e-30f).bits, 0x80);
}

// Tensors widen 8-bit floats through a lookup table (ops/copy.cpp): every code, contiguous and
// strided, to float32 and to bfloat16, equals the scalar decode bit for bit.
template <class F8>
void check_tensor_widening(Dtype dtype) {
  Tensor codes = empty({2, 256}, TensorOptions(dtype));
  auto* bytes = static_cast<uint8_t*>(codes.data_ptr());
  for (int c = 0; c < 256; ++c) bytes[c] = bytes[256 + c] = static_cast<uint8_t>(c);
  for (const Tensor& src : {codes, codes.t().contiguous().t()}) {
    const Tensor f32 = src.to(kFloat32).contiguous(), bf16 = src.to(kBFloat16).contiguous();
    const auto* wide = static_cast<const uint32_t*>(f32.data_ptr());
    const auto* half = static_cast<const uint16_t*>(bf16.data_ptr());
    for (int i = 0; i < 512; ++i) {
      F8 v;
      v.bits = static_cast<uint8_t>(i % 256);
      const auto expected = std::bit_cast<uint32_t>(static_cast<float>(v));
      EXPECT_EQ(wide[i], expected) << "code " << i % 256;
      EXPECT_EQ(half[i], expected >> 16) << "code " << i % 256;
    }
  }
}

TEST(Float8, TensorsWidenEveryCodeExactly) {
  check_tensor_widening<Float8_e4m3fn>(kFloat8_e4m3fn);
  check_tensor_widening<Float8_e5m2>(kFloat8_e5m2);
}

}  // namespace
}  // namespace tally

