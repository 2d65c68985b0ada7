// Tensor::register_post_accumulate_grad_hook, as PyTorch's: run once per backward per leaf,
// after the leaf's gradient has been added into grad(), with the leaf itself.

#include <gtest/gtest.h>

#include <vector>

#include "tally/tally.h"

namespace tally {
namespace {

TEST(PostAccumulateGradHook, RunsOncePerBackwardAfterTheSumOfEveryUse) {
  Tensor w = tensor({1.0f, 2.0f}).requires_grad_();
  std::vector<std::vector<float>> seen;
  w.register_post_accumulate_grad_hook([&](const Tensor& leaf) {
    EXPECT_TRUE(leaf.is_same(w));
    const float* g = leaf.grad().data_ptr<float>();
    seen.push_back({g[0], g[1]});
  });
  // Two uses of w in one graph: the engine sums them first, so the hook sees the whole gradient once.
  (w * 3.0 + w * w).sum().backward();
  ASSERT_EQ(seen.size(), 1u);
  EXPECT_EQ(seen[0], (std::vector<float>{5.0f, 7.0f}));
  // A second backward accumulates, and the hook sees the sum.
  (w * 2.0).sum().backward();
  ASSERT_EQ(seen.size(), 2u);
  EXPECT_EQ(seen[1], (std::vector<float>{7.0f, 9.0f}));
}

TEST(PostAccumulateGradHook, HooksRunInOrderAndCanBeRemoved) {
  Tensor w = ones({3}).requires_grad_();
  std::vector<int> order;
  const unsigned first = w.register_post_accumulate_grad_hook([&](const Tensor&) { order.push_back(1); });
  w.register_post_accumulate_grad_hook([&](const Tensor&) { order.push_back(2); });
  w.sum().backward();
  EXPECT_EQ(order, (std::vector<int>{1, 2}));
  w.remove_post_accumulate_grad_hook(first);
  w.sum().backward();
  EXPECT_EQ(order, (std::vector<int>{1, 2, 2}));
  EXPECT_THROW(w.remove_post_accumulate_grad_hook(first), ValueError);
}

TEST(PostAccumulateGradHook, AHookMayTakeTheGradientAway) {
  // What a data-parallel reducer does: copy the gradient out into a bucket and clear it.
  Tensor w = ones({4}).requires_grad_();
  Tensor bucket = zeros({4});
  w.register_post_accumulate_grad_hook([&](const Tensor& leaf) {
    bucket.copy_(leaf.grad());
    Tensor(leaf).set_grad(Tensor());
  });
  (w * 5.0).sum().backward();
  EXPECT_FALSE(w.grad().defined());
  EXPECT_TRUE(bucket.equal(full({4}, 5.0f)));
}

TEST(PostAccumulateGradHook, RefusedOnNonLeavesAndTensorsWithoutGrad) {
  Tensor w = ones({2}).requires_grad_();
  Tensor y = w * 2.0;
  try {
    y.register_post_accumulate_grad_hook([](const Tensor&) {});
    FAIL() << "a non-leaf took a hook";
  } catch (const ValueError& e) {
    EXPECT_NE(std::string(e.what()).find("non-leaf"), std::string::npos) << e.what();
  }
  EXPECT_THROW(ones({2}).register_post_accumulate_grad_hook([](const Tensor&) {}), ValueError);
}

}  // namespace
}  // namespace tally
