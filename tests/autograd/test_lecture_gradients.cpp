// CS336 lecture 2, gradients_basics: the lecture's assertions about which tensors get .grad.

#include <gtest/gtest.h>

#include "tally/tally.h"

using namespace tally;

TEST(LectureGradients, GradientsBasics) {
  Tensor x = tensor({1., 2, 3});
  Tensor w = tensor({1., 1, 1}).requires_grad_();  // want a gradient
  Tensor pred_y = matmul(x, w);
  Tensor loss = 0.5 * (pred_y - 5).pow(2);
  loss.backward();
  EXPECT_FALSE(loss.grad().defined());
  EXPECT_FALSE(pred_y.grad().defined());
  EXPECT_FALSE(x.grad().defined());
  ASSERT_TRUE(w.grad().defined());
  EXPECT_TRUE(w.grad().equal(tensor({1, 2, 3})));
  EXPECT_TRUE(w.is_leaf());
  EXPECT_FALSE(loss.is_leaf());
  EXPECT_EQ(loss.grad_fn()->name(), "MulBackward0");
  EXPECT_EQ(pred_y.grad_fn()->name(), "MatmulBackward0");
}

TEST(Autograd, RetainGradAccumulateAndNoGrad) {
  Tensor w = tensor({2., 3}).requires_grad_();
  Tensor h = w * w;
  h.retain_grad();
  Tensor loss = h.sum();
  loss.backward(Tensor(), /*retain_graph=*/true);
  EXPECT_TRUE(h.grad().equal(tensor({1., 1})));
  EXPECT_TRUE(w.grad().equal(tensor({4., 6})));
  loss.backward();  // gradients accumulate across backward calls
  EXPECT_TRUE(w.grad().equal(tensor({8., 12})));
  {
    NoGradGuard no_grad;
    Tensor z = w * 2;
    EXPECT_FALSE(z.requires_grad());
  }
  EXPECT_FALSE(w.detach().requires_grad());
}

TEST(Autograd, Errors) {
  Tensor a = ones({2});
  try {
    a.sum().backward();
    FAIL();
  } catch (const ValueError& e) {
    EXPECT_NE(std::string(e.what()).find("does not require grad and does not have a grad_fn"), std::string::npos);
  }
  Tensor w = ones({2}).requires_grad_();
  Tensor l = (w * w).sum();
  l.backward();
  try {
    l.backward();
    FAIL();
  } catch (const ValueError& e) {
    EXPECT_NE(std::string(e.what()).find("Trying to backward through the graph a second time"), std::string::npos);
  }
  Tensor v = w * 2;
  try {
    v.backward(ones({3}));
    FAIL();
  } catch (const ValueError& e) {
    EXPECT_NE(std::string(e.what()).find("Mismatch in shape: grad_output[0] has a shape of [3] and output[0] has a shape of [2]"),
              std::string::npos);
  }
  try {
    v.backward();
    FAIL();
  } catch (const ValueError& e) {
    EXPECT_NE(std::string(e.what()).find("grad can be implicitly created only for scalar outputs"), std::string::npos);
  }
  try {
    w.add_(1);
    FAIL();
  } catch (const ValueError& e) {
    EXPECT_NE(std::string(e.what()).find("a leaf Variable that requires grad is being used in an in-place operation"), std::string::npos);
  }
  EXPECT_THROW(ones({2}, kInt64).requires_grad_(), TypeError);
}
