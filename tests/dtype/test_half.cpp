// Half against the CPU's own F16C conversions, and BFloat16 against a decoder and a
// round-to-nearest-even encoder written from the format definition (8 exponent bits, bias 127,
// 7 mantissa bits).
#include <gtest/gtest.h>
#include <immintrin.h>

#include <bit>
#include <cmath>
#include <cstdint>
#include <limits>

#include "tally/dtype/half.h"

namespace tally {
namespace {

// Target attributes let this file build without -mf16c; the tests skip on a CPU without F16C.
__attribute__((target("f16c"))) float hw_half_to_float(uint16_t h) { return _cvtsh_ss(h); }
__attribute__((target("f16c"))) uint16_t hw_float_to_half(float f) {
  return static_cast<uint16_t>(_cvtss_sh(f, _MM_FROUND_TO_NEAREST_INT));
}
bool has_f16c() { return __builtin_cpu_supports("f16c"); }

bool half_is_nan(uint16_t h) { return (h & 0x7C00u) == 0x7C00u && (h & 0x3FFu) != 0; }

// Checks one float's encoding against the hardware; NaN only has to stay a NaN of the same sign.
bool half_encode_matches(float f) {
  const uint16_t got = Half(f).bits, want = hw_float_to_half(f);
  const bool ok = std::isnan(f) ? half_is_nan(got) && (got & 0x8000u) == (want & 0x8000u) : got == want;
  if (!ok)
    ADD_FAILURE() << "Half(" << std::hexfloat << f << "): got 0x" << std::hex << got << ", F16C gives 0x" << want;
  return ok;
}

TEST(Half, DecodesAll65536PatternsLikeF16C) {
  if (!has_f16c()) GTEST_SKIP() << "no F16C";
  int mismatches = 0;
  for (uint32_t h = 0; h < 65536; ++h) {
    const auto bits = static_cast<uint16_t>(h);
    const uint32_t got = std::bit_cast<uint32_t>(static_cast<float>(Half::from_bits(bits)));
    const uint32_t want = std::bit_cast<uint32_t>(hw_half_to_float(bits));
    if (got != want && ++mismatches <= 10)
      ADD_FAILURE() << "half 0x" << std::hex << h << " -> 0x" << got << ", F16C gives 0x" << want;
  }
  EXPECT_EQ(mismatches, 0);
}

TEST(Half, EncodesStridedFloat32SweepLikeF16C) {
  if (!has_f16c()) GTEST_SKIP() << "no F16C";
  int failures = 0;
  for (uint64_t u = 0; u < (uint64_t{1} << 32) && failures < 20; u += 257)
    failures += !half_encode_matches(std::bit_cast<float>(static_cast<uint32_t>(u)));
}

TEST(Half, EncodesEveryFloat32NearTheBoundaries) {
  if (!has_f16c()) GTEST_SKIP() << "no F16C";
  // Where rounding changes regime: max/overflow, the normal/subnormal border, the smallest
  // subnormal and the underflow-to-zero tie, and an ordinary carry into the exponent.
  const float centres[] = {65504.0f, 65520.0f, 0x1p-14f, 0x1p-24f, 0x1p-25f, 0x3p-25f, 2047.5f, 1.0f};
  int failures = 0;
  for (float c : centres)
    for (int32_t d = -(1 << 14); d <= (1 << 14) && failures < 20; ++d)
      for (float s : {1.0f, -1.0f})
        failures += !half_encode_matches(s * std::bit_cast<float>(static_cast<uint32_t>(std::bit_cast<int32_t>(c) + d)));
  for (float special : {0.0f, -0.0f, std::numeric_limits<float>::infinity(), -std::numeric_limits<float>::infinity(),
                        std::numeric_limits<float>::quiet_NaN(), std::numeric_limits<float>::signaling_NaN()})
    half_encode_matches(special);
}

// bfloat16 value from its fields, in double.
double ref_bf16_decode(uint16_t b) {
  const int sign = b >> 15, exp_field = (b >> 7) & 0xFF, mant = b & 0x7F;
  double m;
  if (exp_field == 0xFF) m = mant ? std::numeric_limits<double>::quiet_NaN() : std::numeric_limits<double>::infinity();
  else if (exp_field == 0) m = std::ldexp(mant, -126 - 7);
  else m = std::ldexp(1.0 + mant / 128.0, exp_field - 127);
  return sign ? -m : m;
}

// Round-to-nearest-even by comparing with the midpoint of the two neighbouring bfloat16 values.
uint16_t ref_bf16_encode(float f) {
  const uint32_t bits = std::bit_cast<uint32_t>(f);
  const auto sign = static_cast<uint16_t>((bits >> 16) & 0x8000u);
  const auto lo = static_cast<uint16_t>((bits & 0x7FFFFFFFu) >> 16);  // truncated magnitude
  const double a = std::fabs(static_cast<double>(f));
  const double lo_value = ref_bf16_decode(lo);
  if (a == lo_value) return sign | lo;  // exact, including infinity
  // One ulp above the largest finite value is 2^128: the value whose selection means overflow to inf.
  const double hi_value = lo == 0x7F7F ? std::ldexp(1.0, 128) : ref_bf16_decode(static_cast<uint16_t>(lo + 1));
  const double mid = (lo_value + hi_value) / 2;  // exact: both have 8 significant bits
  uint16_t chosen = lo;
  if (a > mid || (a == mid && (lo & 1))) chosen = static_cast<uint16_t>(lo + 1);
  return sign | chosen;
}

TEST(BFloat16, DecodesAll65536Patterns) {
  int mismatches = 0;
  for (uint32_t h = 0; h < 65536; ++h) {
    const auto b = static_cast<uint16_t>(h);
    const float got = BFloat16::from_bits(b);
    const double want = ref_bf16_decode(b);
    const bool value_ok = std::isnan(want) ? std::isnan(got) : static_cast<double>(got) == want;
    // bfloat16 is the top half of a float32, so decoding must be exactly a 16-bit shift.
    const bool bits_ok = std::bit_cast<uint32_t>(got) == h << 16;
    if (!(value_ok && bits_ok) && ++mismatches <= 10)
      ADD_FAILURE() << "bfloat16 0x" << std::hex << h << " -> " << got << ", want " << want;
  }
  EXPECT_EQ(mismatches, 0);
}

TEST(BFloat16, EncodesStridedFloat32SweepWithRoundToNearestEven) {
  int failures = 0;
  auto check = [&](float f) {
    const uint16_t got = BFloat16(f).bits;
    bool ok;
    if (std::isnan(f)) ok = std::isnan(static_cast<float>(BFloat16::from_bits(got))) &&
                            (got & 0x8000u) == ((std::bit_cast<uint32_t>(f) >> 16) & 0x8000u);
    else ok = got == ref_bf16_encode(f);
    if (!ok && ++failures <= 20)
      ADD_FAILURE() << "BFloat16(" << std::hexfloat << f << "): got 0x" << std::hex << got << ", want 0x"
                    << ref_bf16_encode(f);
  };
  for (uint64_t u = 0; u < (uint64_t{1} << 32); u += 257) check(std::bit_cast<float>(static_cast<uint32_t>(u)));
  // Ties and the overflow border, where the rounding add could go wrong.
  for (uint32_t base : {0x3F808000u, 0x3F818000u, 0x7F7F8000u, 0x7F7F7FFFu, 0x00008000u, 0x00018000u})
    for (uint32_t s : {0u, 0x80000000u}) check(std::bit_cast<float>(base | s));
  check(std::numeric_limits<float>::signaling_NaN());
  EXPECT_EQ(failures, 0);
}

}  // namespace
}  // namespace tally
