// Printing matches PyTorch 1.13's repr; expected strings were produced by /usr/bin/python3 with torch.

#include <gtest/gtest.h>

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
