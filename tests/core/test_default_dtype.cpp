// set_default_dtype: the floating dtype factories, integer-to-float ops and floating numbers use,
// as torch.set_default_dtype (checked against torch 1.13 by hand: the same dtype in each line).

#include <gtest/gtest.h>

#include "tally/tally.h"
#include "expect_error.h"

namespace tally {
namespace {

using tally::test::expect_error;

/// Sets the default dtype for one test and puts float32 back, whatever happens.
struct DefaultDtype {
  explicit DefaultDtype(Dtype d) { set_default_dtype(d); }
  ~DefaultDtype() { set_default_dtype(kFloat32); }
};

TEST(DefaultDtype, Float32AtStart) {
  EXPECT_EQ(get_default_dtype(), kFloat32);
  EXPECT_EQ(ones({2}).dtype(), kFloat32);
  EXPECT_EQ(tensor({1, 2}).dtype(), kInt64);
}

TEST(DefaultDtype, FactoriesAndPromotionFollowIt) {
  DefaultDtype scope(kFloat64);
  EXPECT_EQ(get_default_dtype(), kFloat64);
  for (const Tensor& t : {ones({2}), zeros({2}), empty({2}), rand({2}), randn({2}), full({2}, 1.5), tensor({1.5, 2.0}),
                          arange(3.0), linspace(0, 1, 5)})
    EXPECT_EQ(t.dtype(), kFloat64) << t;
  EXPECT_EQ(arange(3).dtype(), kInt64);  // integers stay integers
  const Tensor ints = tensor({1, 2, 3});
  EXPECT_EQ((ints / 2).dtype(), kFloat64);     // true division of integers
  EXPECT_EQ(exp(ints).dtype(), kFloat64);      // a unary op that computes in floating point
  EXPECT_EQ((ints * 1.5).dtype(), kFloat64);   // a floating number joins as the default dtype
  EXPECT_EQ((ones({2}, kFloat32) * 1.5).dtype(), kFloat32);  // a number only lifts the category
  EXPECT_EQ(logit(ints).dtype(), kFloat64);
}

TEST(DefaultDtype, HalfDtypesAllowedOthersRefused) {
  {
    DefaultDtype scope(kBFloat16);
    EXPECT_EQ(ones({2}).dtype(), kBFloat16);
    EXPECT_EQ((tensor({1, 2}) * 1.5).dtype(), kBFloat16);
  }
  EXPECT_EQ(get_default_dtype(), kFloat32);
  expect_error<TypeError>([] { set_default_dtype(kInt64); }, {"only floating-point types are supported as the default type", "int64"});
  expect_error<TypeError>([] { set_default_dtype(kFloat8_e4m3fn); }, {"float8_e4m3fn"});
  EXPECT_EQ(get_default_dtype(), kFloat32) << "a refused dtype changes nothing";
}

}  // namespace
}  // namespace tally
