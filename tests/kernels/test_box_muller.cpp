// The float Box–Muller kernels of randn against double precision, over every input they can get:
// u1 and t take 2^24 values each (the top 24 bits of a random word), so the checks are exhaustive.

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <numbers>

#include "tally/kernels/cpu/box_muller.h"

namespace tally::kernels {
namespace {

// Distance in units in the last place of `want` (as a float).
double ulps(float got, double want) {
  const double ulp = std::nextafter(static_cast<float>(std::abs(want)), INFINITY) - static_cast<float>(std::abs(want));
  return std::abs(static_cast<double>(got) - want) / ulp;
}

TEST(BoxMuller, LogOfEveryUniformWithinOneUlp) {
  double worst = 0;
  for (uint32_t k = 0; k < (1u << 24); ++k) {
    const float u = 1.0f - static_cast<float>(k) * 0x1.0p-24f;
    if (k == 0) {
      EXPECT_EQ(log_unit(u), 0.0f);
      continue;
    }
    worst = std::max(worst, ulps(log_unit(u), std::log(static_cast<double>(u))));
  }
  EXPECT_LE(worst, 1.0);  // measured 0.82 (glibc's logf: 0.79)
  EXPECT_NEAR(log_unit(0x1.0p-24f), -24 * std::numbers::ln2, 1e-5);
}

TEST(BoxMuller, SinCosOfEveryAngleWithinTwoUlpsOfOne) {
  double worst_sin = 0, worst_cos = 0;
  for (uint32_t k = 0; k < (1u << 24); ++k) {
    const float t = static_cast<float>(k) * 0x1.0p-24f;
    float s, c;
    sincos_turns(t, s, c);
    const double a = 2 * std::numbers::pi * static_cast<double>(t);
    worst_sin = std::max(worst_sin, std::abs(s - std::sin(a)));
    worst_cos = std::max(worst_cos, std::abs(c - std::cos(a)));
  }
  // |sin|, |cos| ≤ 1, so the error is absolute: within two float ulps of 1 (measured 9.3e-8).
  EXPECT_LE(worst_sin, 1.2e-7);
  EXPECT_LE(worst_cos, 1.2e-7);
  float s, c;
  sincos_turns(0.25f, s, c);  // quadrant boundaries land exactly
  EXPECT_EQ(s, 1.0f);
  EXPECT_EQ(c, 0.0f);
  sincos_turns(0.5f, s, c);
  EXPECT_EQ(s, 0.0f);
  EXPECT_EQ(c, -1.0f);
}

TEST(BoxMuller, PairMatchesTheDoubleFormula) {
  const uint64_t words[][2] = {{0, 0}, {~uint64_t{0}, ~uint64_t{0}}, {0x123456789abcdef0u, 0xfedcba9876543210u},
                               {uint64_t{1} << 40, uint64_t{3} << 62}};
  for (const auto& w : words) {
    float cp, sp;
    normal_pair(w[0], w[1], cp, sp);
    const double u1 = 1.0 - static_cast<double>(w[0] >> 40) * 0x1.0p-24, t = static_cast<double>(w[1] >> 40) * 0x1.0p-24;
    const double r = std::sqrt(-2.0 * std::log(u1)), a = 2 * std::numbers::pi * t;
    EXPECT_NEAR(cp, r * std::cos(a), 1e-6 * (1 + r));
    EXPECT_NEAR(sp, r * std::sin(a), 1e-6 * (1 + r));
    EXPECT_TRUE(std::isfinite(cp) && std::isfinite(sp));
    EXPECT_LT(std::hypot(cp, sp), 5.8f);
  }
}

}  // namespace
}  // namespace tally::kernels
