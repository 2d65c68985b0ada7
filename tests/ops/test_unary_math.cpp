// sin, cos, expm1, log2, log10, reciprocal and the roundings (floor, ceil, round, trunc, sign):
// the differential tests compare every dtype and layout with torch 1.13 and gradcheck takes their
// gradients (tally/ops/registry.h); here, the edges torch decides by rule.

#include <gtest/gtest.h>

#include <cmath>
#include <limits>

#include "tally/tally.h"
#include "tests/expect_error.h"

namespace {

using namespace tally;
using tally::test::expect_error;

TEST(UnaryMath, RoundingEdgesAsTorchs) {
  // torch.round: halves to even, -0.5 to -0; torch.sign: 0 for NaN and for -0.
  const Tensor halves = tensor({0.5, 1.5, 2.5, -0.5, -2.5});
  EXPECT_TRUE(round(halves).equal(tensor({0.0, 2.0, 2.0, -0.0, -2.0})));
  EXPECT_TRUE(std::signbit(round(halves).select(0, 3).item<float>()));
  const Tensor s = sign(tensor({std::numeric_limits<double>::quiet_NaN(), -0.0, 0.0, -3.0, 7.0}));
  EXPECT_TRUE(s.equal(tensor({0.0, 0.0, 0.0, -1.0, 1.0})));
  EXPECT_FALSE(std::signbit(s.select(0, 1).item<float>()));
  EXPECT_TRUE(floor(tensor({-1.5, 1.5})).equal(tensor({-2.0, 1.0})));
  EXPECT_TRUE(ceil(tensor({-1.5, 1.5})).equal(tensor({-1.0, 2.0})));
  EXPECT_TRUE(trunc(tensor({-1.5, 1.5})).equal(tensor({-1.0, 1.0})));
  // Integers come back as they are, in their dtype; sign takes bool, the roundings refuse it.
  const Tensor ints = tensor({1, 0, 2}, TensorOptions(kInt64));
  EXPECT_TRUE(floor(ints).equal(ints));
  EXPECT_EQ(round(tensor({1, 0, 2}, TensorOptions(kUInt8))).dtype(), kUInt8);
  EXPECT_TRUE(sign(tensor({true, false})).equal(tensor({true, false})));
  EXPECT_TRUE(sign(tensor({-4, 0, 9}, TensorOptions(kInt32))).equal(tensor({-1, 0, 1}, TensorOptions(kInt32))));
  expect_error<TypeError>([] { floor(tensor({true})); }, {"\"floor\" not implemented for 'Bool'"});
  // The transcendental ones compute integers in float32, as torch's (reciprocal(0) is inf).
  const Tensor r = reciprocal(ints);
  EXPECT_EQ(r.dtype(), kFloat32);
  EXPECT_TRUE(std::isinf(r.select(0, 1).item<float>()));
  EXPECT_EQ(log2(tensor({8}, TensorOptions(kInt64))).item<float>(), 3.0f);
}

TEST(UnaryMath, TheRoundingsHaveZeroGradients) {
  // torch: floor/ceil/round/trunc/sign backward are zeros; sin's is cos, expm1's is eˣ.
  Tensor x = tensor({0.3, -1.7, 2.2}, TensorOptions(kFloat64)).requires_grad_();
  (floor(x) + ceil(x) + round(x) + trunc(x) + sign(x)).sum().backward();
  EXPECT_TRUE(x.grad().equal(zeros({3}, TensorOptions(kFloat64))));
  Tensor y = tensor({0.3}, TensorOptions(kFloat64)).requires_grad_();
  (sin(y) + expm1(y) + log10(y + 1)).sum().backward();
  EXPECT_NEAR(y.grad().item<double>(), std::cos(0.3) + std::exp(0.3) + 1.0 / (1.3 * std::log(10.0)), 1e-15);
}

}  // namespace
