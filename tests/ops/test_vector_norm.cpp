// linalg::vector_norm and Tensor::norm beyond the differential cases: bfloat16 accumulates in
// float32 (a bfloat16 sum of 100000 squares of 1 stops growing at 256), zero norms pass a zero
// gradient, and what has no identity or no floating dtype is refused, in torch's words.

#include <gtest/gtest.h>

#include <cmath>
#include <limits>

#include "expect_error.h"
#include "tally/tally.h"

namespace tally {
namespace {

using test::expect_error;

TEST(VectorNorm, HalfPrecisionAccumulatesInFloat32) {
  const Tensor x = ones({100000}, TensorOptions().dtype(kBFloat16));
  const Tensor n = x.norm();
  EXPECT_EQ(n.dtype(), kBFloat16);
  EXPECT_EQ(n.item<double>(), 316.0);  // √100000 = 316.23, rounded to bfloat16
  EXPECT_EQ(linalg::vector_norm(x, 1).item<double>(), 99840.0);  // 100000 rounded to bfloat16
  EXPECT_EQ(linalg::vector_norm(ones({70000}, TensorOptions().dtype(kFloat16)), 1).item<double>(),
            std::numeric_limits<double>::infinity());  // past float16's 65504, as torch's
}

TEST(VectorNorm, AZeroNormPassesAZeroGradient) {
  for (double ord : {2.0, 3.0, 0.5, 1.0, std::numeric_limits<double>::infinity()}) {
    Tensor x = zeros({2, 3}).requires_grad_();
    linalg::vector_norm(x, ord, {1}).sum().backward();
    EXPECT_TRUE(x.grad().eq(0.0).all().item<bool>()) << ord;
  }
  // Over rows with and without zeros, ord 0.5: the zero elements get 0, the others |x|^(p−1)·…
  Tensor y = tensor({0.0, 4.0, 0.0, 0.0}).view({2, 2}).requires_grad_();
  linalg::vector_norm(y, 0.5, {1}).sum().backward();
  EXPECT_EQ(y.grad().index({0, 0}).item<double>(), 0.0);
  EXPECT_EQ(y.grad().index({0, 1}).item<double>(), 1.0);  // (√4)^(1/0.5 − 1) · 4^(0.5 − 1) = 2 · 0.5
  EXPECT_EQ(y.grad().index({1}).abs().sum().item<double>(), 0.0);
}

TEST(VectorNorm, RefusesWhatHasNoIdentityOrNoFloatingDtype) {
  expect_error<ValueError>([] { linalg::vector_norm(zeros({0, 3}), std::numeric_limits<double>::infinity()); },
                           {"linalg.vector_norm cannot compute the inf norm on an empty tensor because the operation does not have an identity",
                            "[0, 3]"});
  expect_error<ValueError>([] { linalg::vector_norm(zeros({0, 3}), -std::numeric_limits<double>::infinity(), {0}); },
                           {"cannot compute the -inf norm on an empty tensor"});
  EXPECT_EQ(linalg::vector_norm(zeros({0, 3}), std::numeric_limits<double>::infinity(), {1}).sizes(), IntArrayRef({0}));
  EXPECT_EQ(linalg::vector_norm(zeros({0, 3})).item<double>(), 0.0);
  expect_error<TypeError>([] { linalg::vector_norm(zeros({3}, TensorOptions().dtype(kInt64))); },
                          {"linalg.vector_norm: Expected a floating point or complex tensor as input. Got int64"});
  expect_error<ValueError>([] { linalg::vector_norm(zeros({3}), std::nan("")); }, {"the order must be a number, got nan"});
}

}  // namespace
}  // namespace tally
