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
  // Order 0 counts nonzeros: a result with a gradient, all zero (torch's), even at inf.
  Tensor z = tensor({0.0, 2.0, INFINITY}).requires_grad_();
  const Tensor count = linalg::vector_norm(z, 0);
  EXPECT_EQ(count.item<double>(), 2.0);
  count.backward();
  EXPECT_TRUE(z.grad().eq(0.0).all().item<bool>());
}

// flip, roll, repeat and repeat_interleave always give a new tensor, as torch's, even where a
// view could hold the result (repeats of one, a size-1 dim repeated, shifts of zero).
TEST(Reorder, ResultsAreNewTensorsAndFlipSplitsAnyDim) {
  const Tensor x = arange(6).view({6, 1}).to(kFloat32);
  for (const Tensor& y : {x.repeat({1, 1}), x.repeat({1, 3}), x.repeat_interleave(1, 0), x.repeat_interleave(4, 1), x.roll({6}, {0}),
                          x.flip({})}) {
    EXPECT_NE(y.data_ptr(), x.data_ptr());
    EXPECT_TRUE(y.is_contiguous());
    Tensor(y).add_(1.0);  // writable element by element: no zero strides
  }
  EXPECT_EQ(x.sum().item<double>(), 15.0);
  // Dim 0 alone flipped, big enough for both threads: whole blocks move.
  const Tensor big = arange(1 << 18).view({512, 512});
  const Tensor flipped = big.flip({0});
  EXPECT_TRUE(flipped.index({0}).equal(big.index({511})));
  EXPECT_TRUE(flipped.index({511}).equal(big.index({0})));
  EXPECT_TRUE(big.flip({-1}).index({3, 0}).equal(big.index({3, 511})));
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
