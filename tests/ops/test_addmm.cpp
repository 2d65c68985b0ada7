// addmm: linear layers' product with its bias in one op. The bias row is added in oneDNN's
// epilogue, so the result is rounded once; a linear layer with a bias is one addmm row on the
// ledger, with FLOPs 2·n·k·m + n·m; addmm refuses what it cannot compute, on meta tensors too.

#include <gtest/gtest.h>

#include "expect_error.h"
#include "tally/tally.h"

namespace tally {
namespace {

using test::expect_error;

TEST(Addmm, ShapesAndDtypesMustFit) {
  for (Device d : {Device(kCPU), Device(kMeta)}) {
    const TensorOptions o = TensorOptions().device(d);
    expect_error<ValueError>([&] { addmm(empty({3}, o), empty({4, 5}, o), empty({6, 3}, o)); },
                             {"mat1 and mat2 shapes cannot be multiplied (4x5 and 6x3)"});
    expect_error<ValueError>([&] { addmm(empty({3}, o), empty({4, 5, 1}, o), empty({5, 3}, o)); },
                             {"addmm: mat1 and mat2 must be matrices, got 3-D and 2-D tensors"});
    expect_error<ValueError>([&] { addmm(empty({2}, o), empty({4, 5}, o), empty({5, 3}, o)); },
                             {"The size of tensor a (2) must match the size of tensor b (3)", "shapes [2] and [4, 3]"});
    expect_error<ValueError>([&] { addmm(empty({2, 4, 3}, o), empty({4, 5}, o), empty({5, 3}, o)); },
                             {"addmm: self of shape [2, 4, 3] does not broadcast to the product's shape [4, 3]"});
    expect_error<TypeError>([&] { addmm(empty({3}, o), empty({4, 5}, o), empty({5, 3}, TensorOptions(kBFloat16).device(d))); },
                            {"addmm: expected self, mat1 and mat2 to have the same dtype, but got: float32, float32 and bfloat16"});
    expect_error<TypeError>([&] { addmm(empty({3}, o.dtype(kBool)), empty({4, 5}, o.dtype(kBool)), empty({5, 3}, o.dtype(kBool))); },
                            {"\"addmm\" not implemented for 'bool'"});
  }
}

// The bias row in the epilogue and any other self after the product: the same sums as mm + add
// (rounded once in bfloat16, where mm then add rounds twice), every dtype and path.
TEST(Addmm, EqualsTheProductPlusSelf) {
  Generator g(3);
  for (Dtype dt : {kFloat32, kFloat64, kBFloat16, kFloat16, kInt64}) {
    SCOPED_TRACE(dtype_name(dt));
    const bool integral = dt == kInt64;
    auto make = [&](IntArrayRef sizes) { return integral ? randint(-4, 5, sizes, kInt64, &g) : randn(sizes, {}, &g).to(dt); };
    const Tensor mat1 = make({70, 40}), mat2 = make({30, 40}).t();  // a linear layer's transposed weight
    for (const Tensor& self : {make({30}), make({1, 30}), make({70, 30}), make({70, 1})}) {
      const Tensor y = addmm(self, mat1, mat2);
      const Tensor expected = (mm(mat1.to(kFloat64), mat2.to(kFloat64)) + self.to(kFloat64)).to(dt);
      ASSERT_EQ(y.dtype(), dt);
      if (integral) {
        EXPECT_TRUE(y.equal(expected));
      } else {
        const double tol = dt == kFloat32 || dt == kFloat64 ? 1e-5 : 1e-2;
        EXPECT_TRUE(y.to(kFloat64).allclose(expected.to(kFloat64), tol, tol)) << self.sizes();
      }
    }
  }
  // A tiny float32 product (plain loops) and an empty inner dim take the bias afterwards.
  const Tensor bias = randn({3}, {}, &g);
  EXPECT_TRUE(addmm(bias, ones({2, 2}), ones({2, 3})).allclose(bias + 2));
  EXPECT_TRUE(addmm(bias, ones({2, 0}), ones({0, 3})).equal(bias.expand({2, 3})));
}

TEST(Addmm, ScalesComposeAsPyTorchDoes) {
  Generator g(4);
  const Tensor self = randn({4, 3}, {}, &g), a = randn({4, 5}, {}, &g), b = randn({5, 3}, {}, &g);
  EXPECT_TRUE(addmm(self, a, b, 0.5, 2.0).allclose(self * 0.5 + mm(a, b) * 2.0, 1e-5, 1e-6));
  // beta = 0 ignores self, NaNs included.
  const Tensor nan_self = full({4, 3}, std::nan(""));
  EXPECT_TRUE(addmm(nan_self, a, b, 0.0).allclose(mm(a, b)));
}

// nn::Linear with a bias is one addmm on the ledger (2·n·k·m for the product and n·m for the
// bias), forward; its backward is matmul's two products and the bias's sum.
TEST(Addmm, LinearWithBiasIsOneAddmm) {
  Generator g(5);
  nn::Linear layer(16, 8, true, {}, &g);
  const Tensor x = randn({2, 5, 16}, {}, &g).requires_grad_(true);
  accounting::FlopCounter counter;
  layer.forward(x).sum().backward();
  using accounting::Phase;
  EXPECT_EQ(counter.op("addmm", Phase::Forward).calls, 1);
  EXPECT_EQ(counter.op("addmm", Phase::Forward).flops, 2 * 10 * 16 * 8 + 10 * 8);
  EXPECT_EQ(counter.op("add", Phase::Forward).calls, 0);
  EXPECT_EQ(counter.op("matmul", Phase::Forward).calls, 0);
  EXPECT_EQ(counter.op("matmul", Phase::Backward).calls, 2);
  EXPECT_EQ(nn::linear_bias_adds_per_row(layer), 8);
  NoGradGuard no_grad;
  EXPECT_TRUE(layer.forward(x).allclose(matmul(x, layer.weight.t()) + layer.bias, 1e-5, 1e-6));
  ASSERT_TRUE(layer.weight.grad().defined() && layer.bias.grad().defined());
  EXPECT_TRUE(layer.bias.grad().equal(full({8}, 10.0)));
}

}  // namespace
}  // namespace tally
