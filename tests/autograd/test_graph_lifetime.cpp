// How long graphs live: freed when their last tensor goes, however deep, without recursion.

#include <gtest/gtest.h>

#include <cmath>
#include <functional>

#include "tally/tally.h"
#include "tests/elements.h"

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

// Note [Second backward]: the graphs torch 1.13 runs twice (every node saved sizes only) run
// twice here, the gradient accumulating; those that saved values raise on the second call.
// (w.mean() runs twice in torch, but is a sum and a division by the count here, whose node keeps
// the count as a tensor: it raises, as torch's (w * 3).sum() does.)
TEST(GraphLifetime, ASecondBackwardRunsWhereNoNodeKeptValues) {
  struct Case {
    const char* name;
    std::function<Tensor(const Tensor&)> f;
    std::vector<double> twice;  // torch 1.13's w.grad after two backward calls
  };
  const std::vector<Case> cases = {
      {"sum", [](const Tensor& w) { return w.sum(); }, {2, 2, 2}},
      {"w + 1", [](const Tensor& w) { return (w + 1).sum(); }, {2, 2, 2}},
      {"view, expand", [](const Tensor& w) { return w.view({3, 1}).expand({3, 2}).sum(); }, {4, 4, 4}},
      {"cast", [](const Tensor& w) { return w.to(kFloat64).sum(); }, {2, 2, 2}},
      {"slice", [](const Tensor& w) { return w.slice(0, 1).sum(); }, {0, 2, 2}},
      // Rules that read only shapes or numbers (these raised: a list kept every element, and the
      // others declared nothing about what they read).
      {"cat", [](const Tensor& w) { return cat({w, w}).sum(); }, {4, 4, 4}},
      {"stack", [](const Tensor& w) { return stack({w, w}).sum(); }, {4, 4, 4}},
      {"lerp", [](const Tensor& w) { return w.lerp(zeros({3}), 0.5).sum(); }, {1, 1, 1}},
      {"addcmul", [](const Tensor& w) { return w.addcmul(ones({3}), ones({3})).sum(); }, {2, 2, 2}},
      {"triu", [](const Tensor& w) { return w.view({1, 3}).triu().sum(); }, {2, 2, 2}},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.name);
    Tensor w = ones({3}).requires_grad_();
    Tensor l = c.f(w);
    l.backward();
    l.backward();
    const std::vector<double> got = test::elements<double>(w.grad());
    for (size_t i = 0; i < got.size(); ++i) EXPECT_NEAR(got[i], c.twice[i], 1e-6) << i;
  }
}

TEST(GraphLifetime, ASecondBackwardRaisesWhereANodeKeptValues) {
  const std::vector<std::pair<std::function<Tensor(const Tensor&)>, float>> cases = {
      {[](const Tensor& w) { return (w * w).sum(); }, 2.0f},  // the gradient of the first call: 2w
      {[](const Tensor& w) { return w.exp().sum(); }, std::exp(1.0f)},
  };
  for (const auto& [f, once] : cases) {
    Tensor w = ones({3}).requires_grad_();
    Tensor l = f(w);
    l.backward();
    try {
      l.backward();
      FAIL() << "a second backward through a node that freed its values ran";
    } catch (const ValueError& e) {
      EXPECT_NE(std::string(e.what()).find("Trying to backward through the graph a second time"), std::string::npos);
    }
    EXPECT_TRUE(allclose(w.grad(), full({3}, once))) << w.grad();  // the failed call added nothing
  }
}

}  // namespace
}  // namespace tally
