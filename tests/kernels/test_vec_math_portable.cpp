// vec_math.h's plain-array target, the one a build for a CPU without AVX2 + FMA gets. This file
// alone is compiled for baseline x86-64 (tests/CMakeLists.txt), so the AVX-512 or AVX2 build that
// runs the rest of the suite still covers it; the functions are checked against std:: on sweeps.

#include <gtest/gtest.h>

#include <algorithm>
#include <bit>
#include <cmath>
#include <cstdint>
#include <limits>
#include <vector>

#include "tally/kernels/cpu/vec_math.h"
#include "tests/kernels/vec_math_checks.h"

#if defined(__AVX2__) || defined(__AVX512F__)
#error "test_vec_math_portable.cpp must be built for baseline x86-64 to reach the plain-array target"
#endif

namespace tally::kernels {
namespace {

constexpr float kInf = std::numeric_limits<float>::infinity();

using vec_checks::ulp_distance;

// exp of every input through the vector exp.
std::vector<float> vector_exp(const std::vector<float>& in) {
  return vec_checks::apply_lanes(in, [](Vec16f v) { return kernels::exp(v); });
}

// Every finite input's exp within 1 ulp of the correctly rounded one, denormal and overflowing
// results included, even with each polynomial step rounded twice for want of FMA. (An exhaustive
// run over all 2^32 inputs, too slow for the suite, found the same bound on this target and on AVX-512.)
TEST(VecMathPortable, ExpMatchesStdOverAllMagnitudes) {
  std::vector<float> in;
  for (float x = -110.0f; x < 110.0f; x += 0.00731f) in.push_back(x);       // the interesting range
  for (uint64_t bits = 0; bits < (uint64_t{1} << 32); bits += 40009) {       // every binade, both signs
    const float x = std::bit_cast<float>(static_cast<uint32_t>(bits));
    if (!std::isnan(x)) in.push_back(x);
  }
  const std::vector<float> out = vector_exp(in);
  int64_t worst = 0;
  for (size_t i = 0; i < in.size(); ++i) {
    const float ref = static_cast<float>(std::exp(static_cast<double>(in[i])));
    const int64_t d = ulp_distance(out[i], ref);
    worst = std::max(worst, d);
    ASSERT_LE(d, 1) << "exp(" << in[i] << ") = " << out[i] << ", std::exp gives " << ref;
  }
  RecordProperty("worst_ulp", static_cast<int>(worst));
}

TEST(VecMathPortable, ExpSpecialValues) {
  const std::vector<float> in = {kInf, -kInf, std::numeric_limits<float>::quiet_NaN(), 0.0f, -0.0f, 1e30f, -1e30f,
                                 88.72f, 88.73f, -103.0f, -104.0f, 1.0f, -1.0f};
  const std::vector<float> out = vector_exp(in);
  EXPECT_EQ(out[0], kInf);
  EXPECT_EQ(out[1], 0.0f);
  EXPECT_TRUE(std::isnan(out[2]));
  EXPECT_EQ(out[3], 1.0f);
  EXPECT_EQ(out[4], 1.0f);
  EXPECT_EQ(out[5], kInf);  // large arguments are clamped, not reduced into garbage
  EXPECT_EQ(out[6], 0.0f);
  EXPECT_TRUE(std::isfinite(out[7]));
  EXPECT_EQ(out[8], kInf);
  EXPECT_GT(out[9], 0.0f);  // a denormal, not flushed
  EXPECT_EQ(out[10], 0.0f);
  EXPECT_LE(ulp_distance(out[11], static_cast<float>(M_E)), 1);
  EXPECT_LE(ulp_distance(out[12], static_cast<float>(1 / M_E)), 1);
}

TEST(VecMathPortable, TanhWithinSixUlpAndExactlyOneWhereItRounds) { vec_checks::check_tanh(); }

// The lanewise operations as the kernels use them: sigmoid = 1 / (1 + exp(0 − x)).
TEST(VecMathPortable, LanewiseArithmeticAsSigmoid) {
  float x[16], y[16];
  for (int i = 0; i < 16; ++i) x[i] = -8.0f + 1.1f * static_cast<float>(i);
  store(y, div(splat(1.0f), add(splat(1.0f), kernels::exp(sub(splat(0.0f), load(x))))));
  for (int i = 0; i < 16; ++i) EXPECT_NEAR(y[i], 1.0 / (1.0 + std::exp(-static_cast<double>(x[i]))), 2e-7) << x[i];
  store(y, mul(load(x), splat(2.0f)));
  for (int i = 0; i < 16; ++i) EXPECT_EQ(y[i], 2.0f * x[i]);
}

// The x86 targets' order, so a sum comes out with the same bits on every target: lane i + lane
// i + 8, then + 4, then + 2, then the last two. Mixed magnitudes make the order visible.
TEST(VecMathPortable, ReductionsFoldInTheX86Order) {
  float x[16];
  for (int i = 0; i < 16; ++i) x[i] = (i % 3 == 0 ? 1e8f : 1.0f) * (i % 2 ? -1.0f : 1.0f) + 0.37f * static_cast<float>(i);
  float s[8];
  for (int i = 0; i < 8; ++i) s[i] = x[i] + x[i + 8];
  for (int i = 0; i < 4; ++i) s[i] = s[i] + s[i + 4];
  for (int i = 0; i < 2; ++i) s[i] = s[i] + s[i + 2];
  EXPECT_EQ(std::bit_cast<uint32_t>(reduce_add(load(x))), std::bit_cast<uint32_t>(s[0] + s[1]));
  EXPECT_EQ(reduce_max(load(x)), 1e8f + 0.37f * 12);
  // maxps semantics: a NaN in the second operand wins, so softmax's running max sees NaN inputs.
  x[5] = std::numeric_limits<float>::quiet_NaN();
  float m[16];
  store(m, kernels::max(splat(0.0f), load(x)));
  EXPECT_TRUE(std::isnan(m[5]));
  EXPECT_EQ(m[4], x[4]);
}

TEST(VecMathPortable, PartialLoadsAndStoresTouchOnlyTheirLanes) {
  float in[16], out[16];
  for (int i = 0; i < 16; ++i) in[i] = static_cast<float>(i + 1);
  for (int64_t n = 0; n < 16; ++n) {
    for (float& o : out) o = -1.0f;
    const Vec16f v = load_partial(in, n);
    EXPECT_EQ(reduce_add(v), static_cast<float>(n * (n + 1) / 2)) << n;  // zeros beyond n
    store_partial(out, v, n);
    for (int64_t i = 0; i < 16; ++i) EXPECT_EQ(out[i], i < n ? in[i] : -1.0f) << n << " " << i;
  }
  alignas(64) float streamed[16];
  stream(streamed, load(in));
  stream_fence();
  for (int i = 0; i < 16; ++i) EXPECT_EQ(streamed[i], in[i]);
}

}  // namespace
}  // namespace tally::kernels
