// How long graphs live: freed when their last tensor goes, however deep, without recursion.

#include <gtest/gtest.h>

#include "tally/tally.h"

namespace tally {
namespace {

// Deep enough that releasing it by nested destructors would overflow an 8 MiB stack.
constexpr int kDepth = 200000;

TEST(GraphLifetime, DroppingADeepChainDoesNotOverflowTheStack) {
  Tensor w = ones({1}).requires_grad_();
  std::weak_ptr<Node> first;
  Tensor y = w;
  for (int i = 0; i < kDepth; ++i) {
    y = y * 1.0;
    if (i == 0) first = y.grad_fn();
  }
  EXPECT_FALSE(first.expired());
  y = Tensor();
  EXPECT_TRUE(first.expired());  // the whole chain is gone, down to its first node
}

TEST(GraphLifetime, BackwardThroughADeepChain) {
  Tensor w = full({2}, 3.0).requires_grad_();
  Tensor y = w;
  for (int i = 0; i < kDepth; ++i) y = y + 1.0;
  y.sum().backward();
  EXPECT_TRUE(w.grad().equal(ones({2})));
}

TEST(GraphLifetime, SharedSubgraphOutlivesOneOfItsUsers) {
  Tensor w = ones({3}).requires_grad_();
  Tensor h = w * 2;
  Tensor a = h * 3, b = h + 1;
  std::weak_ptr<Node> shared = h.grad_fn();
  h = Tensor();
  a = Tensor();
  EXPECT_FALSE(shared.expired());  // b still needs it
  b.sum().backward();
  EXPECT_TRUE(w.grad().equal(full({3}, 2.0)));
  b = Tensor();
  EXPECT_TRUE(shared.expired());
}

}  // namespace
}  // namespace tally
