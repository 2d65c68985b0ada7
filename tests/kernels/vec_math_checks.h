#pragma once
// Helpers for checking vec_math.h's functions, and the tanh check, for whichever vec_math target
// the including file is compiled for: test_vec_math_portable.cpp (plain arrays) and
// test_vec_tanh.cpp (the build's own). Internal linkage, so that each target's copy stays its own
// (Note [CPU kernel dispatch]).

#include <gtest/gtest.h>

#include <bit>
#include <cmath>
#include <cstdint>
#include <limits>
#include <vector>

#include "tally/kernels/cpu/vec_math.h"

namespace tally::kernels::vec_checks {
namespace {

/// f of every input, 16 at a time, the last partial group masked as the elementwise kernel does.
template <class F>
std::vector<float> apply_lanes(const std::vector<float>& in, F f) {
  std::vector<float> out(in.size());
  const int64_t n = static_cast<int64_t>(in.size());
  int64_t i = 0;
  for (; i + 16 <= n; i += 16) store(out.data() + i, f(load(in.data() + i)));
  if (i < n) store_partial(out.data() + i, f(load_partial(in.data() + i, n - i)), n - i);
  return out;
}

/// Distance in representable floats between the magnitudes of a and b (inf counts as one past max).
int64_t ulp_distance(float a, float b) {
  return std::abs(static_cast<int64_t>(std::bit_cast<uint32_t>(std::fabs(a))) - static_cast<int64_t>(std::bit_cast<uint32_t>(std::fabs(b))));
}

std::vector<float> vector_tanh(const std::vector<float>& in) {
  return apply_lanes(in, [](Vec16f v) { return kernels::tanh(v); });
}

/// Within 6 ulp of std::tanh (the fit measures 5) from tiny to saturated, both signs; exactly ±1
/// once tanh rounds there and beyond; −0, NaN and the infinities as std::tanh has them.
void check_tanh() {
  std::vector<float> in;
  for (float x = -12.0f; x < 12.0f; x += 0.000917f) in.push_back(x);
  for (float x = 1e-30f; x < 1.0f; x *= 1.37f) {
    in.push_back(x);
    in.push_back(-x);
  }
  const std::vector<float> out = vector_tanh(in);
  for (size_t i = 0; i < in.size(); ++i) {
    const float ref = std::tanh(in[i]);
    ASSERT_LE(ulp_distance(out[i], ref), 6) << "tanh(" << in[i] << ") = " << out[i] << ", std::tanh gives " << ref;
    ASSERT_EQ(std::signbit(out[i]), std::signbit(in[i])) << in[i];
  }
  const float inf = std::numeric_limits<float>::infinity();
  const std::vector<float> special = vector_tanh({inf, -inf, std::numeric_limits<float>::quiet_NaN(), 0.0f, -0.0f, 9.01f, -9.01f, 1e30f, -3e38f});
  EXPECT_EQ(special[0], 1.0f);
  EXPECT_EQ(special[1], -1.0f);
  EXPECT_TRUE(std::isnan(special[2]));
  EXPECT_EQ(std::bit_cast<uint32_t>(special[3]), 0u);
  EXPECT_EQ(std::bit_cast<uint32_t>(special[4]), 0x80000000u);
  for (size_t i = 5; i < special.size(); ++i) EXPECT_EQ(special[i], i % 2 ? 1.0f : -1.0f) << i;
}

}  // namespace
}  // namespace tally::kernels::vec_checks
