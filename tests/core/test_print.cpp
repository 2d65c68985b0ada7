// Printing matches PyTorch 1.13's repr; expected strings were produced by /usr/bin/python3 with torch.

#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <limits>

#include "tally/tally.h"

using namespace tally;

TEST(Print, MatchesTorchRepr) {
  EXPECT_EQ(tensor({{1.5, -2.25}, {3.0, 4.125}}).to_string(), "tensor([[ 1.5000, -2.2500],\n        [ 3.0000,  4.1250]])");
  EXPECT_EQ(tensor({1, -20, 300}).to_string(), "tensor([  1, -20, 300])");
  EXPECT_EQ(tensor({true, false}).to_string(), "tensor([ True, False])");
  EXPECT_EQ(tensor({1., 2.}, kFloat64).to_string(), "tensor([1., 2.], dtype=torch.float64)");
  EXPECT_EQ(tensor({1e-5, 1.0, 1000.0}).to_string(), "tensor([1.0000e-05, 1.0000e+00, 1.0000e+03])");
  EXPECT_EQ(scalar_tensor(3.0).to_string(), "tensor(3.)");
  EXPECT_EQ(zeros({0, 3}).to_string(), "tensor([], size=(0, 3))");
  EXPECT_EQ(tensor({NAN, INFINITY, 1.5}).to_string(), "tensor([   nan,    inf, 1.5000])");
  EXPECT_EQ(tensor({1.0, 2.5}, kBFloat16).to_string(), "tensor([1.0000, 2.5000], dtype=torch.bfloat16)");
  EXPECT_EQ(arange(8).view({2, 2, 2}).to_string(), "tensor([[[0, 1],\n         [2, 3]],\n\n        [[4, 5],\n         [6, 7]]])");
  EXPECT_EQ(arange(2000, kFloat32).to_string(),
            "tensor([0.0000e+00, 1.0000e+00, 2.0000e+00,  ..., 1.9970e+03, 1.9980e+03,\n        1.9990e+03])");
  EXPECT_EQ(tensor({1, 2}, kInt32).to_string(), "tensor([1, 2], dtype=torch.int32)");
}

TEST(Print, Int64PrintsExactly) {
  // torch.full((1,), 2**63 - 1) -> tensor([9223372036854775807])
  EXPECT_EQ(full({1}, std::numeric_limits<int64_t>::max()).to_string(), "tensor([9223372036854775807])");
  // torch.full((1,), 2**53 + 1) -> tensor([9007199254740993])
  EXPECT_EQ(full({1}, (int64_t{1} << 53) + 1).to_string(), "tensor([9007199254740993])");
  // torch.tensor([1, -2**63]) -> tensor([                   1, -9223372036854775808])
  EXPECT_EQ(full({2}, std::numeric_limits<int64_t>::min()).index_put_({0}, 1).to_string(),
            "tensor([                   1, -9223372036854775808])");
}

TEST(Print, WidthComesFromNonzeroFiniteValues) {
  // torch's _Formatter measures only the nonzero finite values: nan, inf and 0 do not widen a column.
  EXPECT_EQ(tensor({NAN, 1.}).to_string(), "tensor([nan, 1.])");                   // tensor([nan, 1.])
  EXPECT_EQ(tensor({-0., 1.}).to_string(), "tensor([-0., 1.])");                   // tensor([-0., 1.])
  EXPECT_EQ(tensor({INFINITY, -INFINITY, 1.}).to_string(), "tensor([inf, -inf, 1.])");  // tensor([inf, -inf, 1.])
  EXPECT_EQ(tensor({NAN, -1.5}).to_string(), "tensor([    nan, -1.5000])");        // tensor([    nan, -1.5000])
  EXPECT_EQ(tensor({-0., 1.5}).to_string(), "tensor([-0.0000, 1.5000])");          // tensor([-0.0000, 1.5000])
  EXPECT_EQ(tensor({NAN}).to_string(), "tensor([nan])");                           // tensor([nan])
  EXPECT_EQ(tensor({-0., -0.}).to_string(), "tensor([-0., -0.])");                 // tensor([-0., -0.])
  EXPECT_EQ(tensor({NAN, 1e-5, 1.}).to_string(), "tensor([       nan, 1.0000e-05, 1.0000e+00])");
}

TEST(Print, EmptyTensorsNameEveryDtypeButFloat32) {
  EXPECT_EQ(empty({0}, kInt64).to_string(), "tensor([], dtype=torch.int64)");  // tensor([], dtype=torch.int64)
  EXPECT_EQ(empty({0}, kBool).to_string(), "tensor([], dtype=torch.bool)");    // tensor([], dtype=torch.bool)
  EXPECT_EQ(empty({0}).to_string(), "tensor([])");                              // tensor([])
  // torch.empty(0, 3, dtype=torch.int64) -> tensor([], size=(0, 3), dtype=torch.int64)
  EXPECT_EQ(empty({0, 3}, kInt64).to_string(), "tensor([], size=(0, 3), dtype=torch.int64)");
}

TEST(Print, DtypeSuffixWrapsAtTheLineWidth) {
  // torch.arange(30, dtype=torch.float64) * 1.5: the suffix does not fit after the last line's
  // values, so it starts a new line indented 7 spaces.
  EXPECT_EQ((arange(30, kFloat64) * 1.5).to_string(),
            "tensor([ 0.0000,  1.5000,  3.0000,  4.5000,  6.0000,  7.5000,  9.0000, 10.5000,\n"
            "        12.0000, 13.5000, 15.0000, 16.5000, 18.0000, 19.5000, 21.0000, 22.5000,\n"
            "        24.0000, 25.5000, 27.0000, 28.5000, 30.0000, 31.5000, 33.0000, 34.5000,\n"
            "        36.0000, 37.5000, 39.0000, 40.5000, 42.0000, 43.5000],\n"
            "       dtype=torch.float64)");
  // torch.arange(20, dtype=torch.float64): it fits, and stays on the last line.
  EXPECT_EQ(arange(20, kFloat64).to_string(),
            "tensor([ 0.,  1.,  2.,  3.,  4.,  5.,  6.,  7.,  8.,  9., 10., 11., 12., 13.,\n"
            "        14., 15., 16., 17., 18., 19.], dtype=torch.float64)");
  // torch.arange(12, dtype=torch.int32) * 1000000
  EXPECT_EQ((arange(12, kInt32) * 1000000).to_string(),
            "tensor([       0,  1000000,  2000000,  3000000,  4000000,  5000000,  6000000,\n"
            "         7000000,  8000000,  9000000, 10000000, 11000000], dtype=torch.int32)");
}
