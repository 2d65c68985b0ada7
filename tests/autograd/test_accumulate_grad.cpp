// A leaf's first gradient is kept as it is when nothing else holds its bytes (as PyTorch's
// AccumulateGrad steals it), and copied when something does: two leaves never share a gradient,
// a gradient never aliases a tensor still in use, and accumulating changes only its own leaf's.

#include <gtest/gtest.h>

#include "tally/tally.h"
#include "expect_error.h"

namespace tally {
namespace {

using accounting::Phase;

TEST(AccumulateGrad, AWeightsGradientIsNotCopied) {
  Generator g(1);
  nn::Linear layer(8, 4, true, {}, &g);
  accounting::FlopCounter counter;
  layer.forward(randn({3, 8}, {}, &g)).sum().backward();
  EXPECT_EQ(counter.op("clone", Phase::Backward).calls, 0);
  ASSERT_TRUE(layer.weight.grad().defined() && layer.bias.grad().defined());
  EXPECT_EQ(layer.weight.grad().sizes(), layer.weight.sizes());
  EXPECT_EQ(layer.weight.grad().strides(), layer.weight.strides());
}

// add's backward hands one gradient to both inputs: the second leaf gets a copy, not an alias.
TEST(AccumulateGrad, LeavesSharingOneGradientGetTheirOwn) {
  Tensor a = ones({4}).requires_grad_(), b = ones({4}).requires_grad_();
  (a + b).sum().backward();
  EXPECT_FALSE(a.grad().is_same_storage(b.grad()));
  Tensor(a.grad()).mul_(5.0);
  EXPECT_TRUE(b.grad().equal(ones({4})));
}

// A gradient that is a view of a bigger buffer, or laid out otherwise than its leaf, is copied
// into the leaf's layout.
TEST(AccumulateGrad, ViewsAndOtherLayoutsAreCopied) {
  Tensor w = ones({3, 2}).requires_grad_();
  Tensor big = ones({3, 4}).requires_grad_();
  (w * 2.0).sum().backward();
  EXPECT_TRUE(w.grad().equal(full({3, 2}, 2.0)));
  // A transposed use: the gradient equals the analytic one whatever layout it arrives in.
  Tensor wt = ones({2, 3}).requires_grad_();
  matmul(ones({5, 2}), wt).sum().backward();
  EXPECT_TRUE(wt.grad().equal(full({2, 3}, 5.0)));
  // A narrowed use: the gradient is its own buffer of the leaf's size.
  big.narrow(1, 0, 2).sum().backward();
  EXPECT_EQ(big.grad().sizes(), big.sizes());
  EXPECT_TRUE(big.grad().narrow(1, 2, 2).equal(zeros({3, 2})));
}

// Accumulating into a kept gradient changes nothing but that gradient.
TEST(AccumulateGrad, AccumulatingIntoAKeptGradientTouchesNothingElse) {
  Tensor w = ones({4}).requires_grad_();
  Tensor y = w * 3.0;
  y.sum().backward();
  const Tensor first = w.grad();
  (w * 2.0).sum().backward();
  EXPECT_TRUE(w.grad().equal(full({4}, 5.0)));
  EXPECT_TRUE(first.is_same_storage(w.grad()));  // accumulated in place, as PyTorch does
}

// torch 1.13's answers, each once different here.
TEST(AccumulateGrad, ALeafWhoseRequiresGradWasTurnedOffTakesNothing) {
  Tensor w = tensor({1.f, 2, 3}).requires_grad_();
  Tensor y = w * 2;
  w.requires_grad_(false);
  y.sum().backward();
  EXPECT_FALSE(w.grad().defined());  // it was [2, 2, 2]
}

TEST(AccumulateGrad, AnAssignedGradientMustHaveTheLeafsDtype) {
  Tensor w = tensor({1.f, 2, 3}).requires_grad_();
  ::tally::test::expect_error<TypeError>([&] { w.set_grad(zeros({3}, TensorOptions(kFloat64))); },
                                         {"assigned grad has data of a different type: float64 for a float32 tensor"});
  EXPECT_FALSE(w.grad().defined());
  (w * 2).sum().backward();
  EXPECT_EQ(w.grad().dtype(), kFloat32);
}

TEST(AccumulateGrad, ASeedThatRequiresGradIsTakenAsAValueOnALeaf) {
  Tensor w = tensor({1.f, 2, 3}).requires_grad_();
  w.backward(ones({3}).requires_grad_());
  EXPECT_TRUE(w.grad().equal(ones({3})));
  EXPECT_FALSE(w.grad().requires_grad());
  w.backward(ones({3}).requires_grad_());  // accumulates, as torch's
  EXPECT_TRUE(w.grad().equal(full({3}, 2.0)));
}

}  // namespace
}  // namespace tally
