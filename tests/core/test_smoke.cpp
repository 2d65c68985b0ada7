#include <gtest/gtest.h>

#include "tally/tally.h"

using namespace tally;

TEST(Smoke, BasicOps) {
  Tensor x = tensor({{1., 2, 3}, {4, 5, 6}});
  EXPECT_EQ(x.dtype(), kFloat32);
  EXPECT_EQ(x.stride(0), 3);
  Tensor y = x + x * 2;
  EXPECT_FLOAT_EQ(y.index({1, 2}).item<float>(), 18.f);
  EXPECT_FLOAT_EQ(x.sum().item<float>(), 21.f);
  EXPECT_EQ(x.t().is_contiguous(), false);
  EXPECT_EQ(x.to_string(), "tensor([[1., 2., 3.],\n        [4., 5., 6.]])");
  Tensor m = matmul(x, x.t());
  EXPECT_FLOAT_EQ(m.index({0, 1}).item<float>(), 32.f);
}

TEST(Smoke, ArithmeticMethodsTakeNumbersAsLibtorchDoes) {
  Tensor x = tensor({1., 2, 3});
  EXPECT_TRUE(x.add(2).equal(tensor({3., 4, 5})));
  EXPECT_TRUE(x.add(2, 3).equal(tensor({7., 8, 9})));  // self + alpha * other
  EXPECT_TRUE(x.sub(1, 2).equal(tensor({-1., 0, 1})));
  EXPECT_TRUE(x.mul(2).equal(x * 2));
  EXPECT_TRUE(x.div(2).equal(tensor({0.5, 1, 1.5})));
  EXPECT_EQ(tensor({1, 2}).div(2).dtype(), kFloat32);  // true division, as torch
  EXPECT_EQ(tensor({1, 2}).mul(2).dtype(), kInt64);
  EXPECT_THROW(tensor({true, false}).sub(true), TypeError);
}

TEST(Smoke, OptionsCarryTheDtypeAndDeviceToAFactory) {
  Tensor x = ones({2, 3}, TensorOptions(kBFloat16).device(kMeta));
  Tensor z = zeros({4}, x.options());
  EXPECT_EQ(z.dtype(), kBFloat16);
  EXPECT_TRUE(z.device().is_meta());
  // As libtorch's x.options().dtype(...): the dtype changes, the device stays.
  Tensor w = empty({4}, x.options().dtype(kInt64));
  EXPECT_EQ(w.dtype(), kInt64);
  EXPECT_TRUE(w.device().is_meta());
  EXPECT_EQ(ones({1}, kFloat64).options().device_or(Device(kMeta)), Device(kCPU));
}
