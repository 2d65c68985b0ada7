// Tensor hooks, autograd::grad, backward's `inputs`, and gradients of gradients (create_graph).
// Second-order gradcheck over every differentiable op is in test_gradcheck.cpp.

#include <gtest/gtest.h>

#include <vector>

#include "tally/tally.h"
#include "tests/expect_error.h"

namespace {

using namespace tally;
using tally::test::expect_error;

Tensor leaf(std::vector<int64_t> sizes) { return randn(sizes, kFloat64).requires_grad_(); }

TEST(TensorHooks, SeeAndReplaceGradientsInOrder) {
  Tensor x = leaf({3});
  Tensor h = x * 2;
  std::vector<std::string> order;
  Tensor seen;
  h.register_hook([&](const Tensor& g) { seen = g.clone(); order.push_back("h"); });
  // A leaf's hook runs before the gradient is added into grad(); what it returns replaces it.
  const unsigned doubled = x.register_hook([&](const Tensor& g) { order.push_back("x1"); return g * 2; });
  x.register_hook([&](const Tensor& g) { order.push_back("x2"); return g + 1; });
  (h * h).sum().backward();
  EXPECT_TRUE(seen.allclose(2 * h.detach()));
  EXPECT_TRUE(x.grad().allclose((8 * x.detach()) * 2 + 1));
  EXPECT_EQ(order, (std::vector<std::string>{"h", "x1", "x2"}));
  // Removed, it no longer runs; a handle the tensor does not hold is an error.
  x.remove_hook(doubled);
  x.set_grad(Tensor());
  (x * 3).sum().backward();
  EXPECT_TRUE(x.grad().allclose(full({3}, 4.0, TensorOptions(kFloat64))));
  expect_error<ValueError>([&] { x.remove_hook(doubled); }, {"no hook with handle"});
  expect_error<ValueError>([&] { zeros({2}).register_hook([](const Tensor&) {}); }, {"doesn't require gradient"});
  expect_error<ValueError>(
      [&] {
        Tensor y = leaf({2});
        y.register_hook([](const Tensor&) { return zeros({3}, TensorOptions(kFloat64)); });
        y.sum().backward();
      },
      {"returned a gradient of shape [3]"});
}

TEST(AutogradGrad, ReturnsGradientsWithoutTouchingGrad) {
  Tensor x = leaf({4});
  Tensor y = (x * x * x).sum();
  const TensorList g = autograd::grad({y}, {x}, {}, /*retain_graph=*/true);
  EXPECT_TRUE(g[0].allclose(3 * x.detach() * x.detach()));
  EXPECT_FALSE(x.grad().defined());
  // A non-leaf input: the gradient that reaches it.
  Tensor a = leaf({2}), b = a * 3;
  EXPECT_TRUE(autograd::grad({(b * b).sum()}, {b})[0].allclose(2 * b.detach()));
  expect_error<ValueError>([&] { autograd::grad({y}, {zeros({4})}); }, {"does not require grad"});
  expect_error<ValueError>([&] { autograd::grad({x * 2}, {x}); }, {"grad can be implicitly created only for scalar outputs"});
}

TEST(AutogradGrad, BackwardInputsWritesOnlyThose) {
  Tensor x = leaf({2}), w = leaf({2});
  Tensor h = x * w;
  h.sum().backward({}, std::nullopt, false, {w, h});
  EXPECT_FALSE(x.grad().defined());
  EXPECT_TRUE(w.grad().allclose(x.detach()));
  EXPECT_TRUE(h.grad().allclose(ones({2}, TensorOptions(kFloat64))));
}

TEST(HigherOrder, SecondDerivativesThroughSavedOutputs) {
  // exp's rule reads its output: the second derivative must come back through it.
  Tensor x = leaf({5});
  Tensor y = x.exp().sum();
  const Tensor dx = autograd::grad({y}, {x}, {}, std::nullopt, /*create_graph=*/true)[0];
  EXPECT_TRUE(dx.requires_grad());
  const Tensor ddx = autograd::grad({dx.sum()}, {x})[0];
  EXPECT_TRUE(ddx.allclose(x.detach().exp()));
  // tanh: d²/dx² = −2·tanh·(1 − tanh²).
  Tensor t = x.tanh();
  const Tensor dt = autograd::grad({t.sum()}, {x}, {}, std::nullopt, true)[0];
  const Tensor v = x.detach().tanh();
  EXPECT_TRUE(autograd::grad({dt.sum()}, {x})[0].allclose(-2 * v * (1 - v * v)));
  // A Hessian-vector product of a small network, against central differences.
  Tensor w = leaf({3, 4});
  const Tensor in = randn({2, 4}, kFloat64);
  auto loss = [&](const Tensor& weight) { return softmax(in.matmul(weight.t()).tanh(), -1).pow(2).sum(); };
  const Tensor g = autograd::grad({loss(w)}, {w}, {}, std::nullopt, true)[0];
  const Tensor u = randn({3, 4}, kFloat64);
  const Tensor hv = autograd::grad({(g * u).sum()}, {w})[0];
  const double eps = 1e-6;
  Tensor up, down;
  {
    Tensor wp = (w.detach() + eps * u).requires_grad_(), wm = (w.detach() - eps * u).requires_grad_();
    up = autograd::grad({loss(wp)}, {wp})[0];
    down = autograd::grad({loss(wm)}, {wm})[0];
  }
  EXPECT_TRUE(hv.allclose((up - down) / (2 * eps), 1e-5, 1e-7));
  // create_graph leaves grad() with history: a gradient penalty can be minimised.
  Tensor z = leaf({3});
  (z.pow(3)).sum().backward({}, std::nullopt, true);
  EXPECT_TRUE(z.grad().requires_grad());
  z.set_grad(Tensor());  // the graph in z.grad() holds z: the cycle PyTorch's warning names
}

TEST(HigherOrder, GradientsOfGradientsLeakNothing) {
  // autograd::grad keeps no gradient in any leaf, so a create_graph graph dies with its results
  // (this binary runs under LeakSanitizer in CI).
  Tensor w = leaf({4});
  for (int i = 0; i < 3; ++i) {
    const Tensor g = autograd::grad({(w * w * w).sum()}, {w}, {}, std::nullopt, true)[0];
    const Tensor h = autograd::grad({g.sum()}, {w})[0];
    EXPECT_TRUE(h.allclose(6 * w.detach()));
  }
}

}  // namespace
