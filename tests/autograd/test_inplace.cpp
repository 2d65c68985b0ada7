// In-place ops and autograd: the version counter (Note [Version counter] in ops/apply.h) turns a
// backward that would read overwritten values into PyTorch's error, and in-place ops that cannot
// be recorded are refused instead of dropping a gradient.

#include <gtest/gtest.h>

#include <functional>
#include <string>
#include <vector>

#include "tally/tally.h"

using namespace tally;

namespace {

template <class Fn>
std::string message_of(Fn&& fn) {
  try {
    fn();
  } catch (const Error& e) {
    return e.what();
  }
  return "no error";
}

bool contains(const std::string& text, const std::string& part) { return text.find(part) != std::string::npos; }

TEST(VersionCounter, InPlaceOpsBumpItAndViewsShareIt) {
  Tensor x = zeros({2, 3});
  Tensor row = x.select(0, 1);
  EXPECT_EQ(x._version(), 0);
  x.add_(1);
  EXPECT_EQ(x._version(), 1);
  EXPECT_EQ(row._version(), 1);  // one counter per storage, as PyTorch shares it between views
  row.fill_(5);
  EXPECT_EQ(x._version(), 2);
  x.index_put_({0, 0}, 7.0);
  EXPECT_GE(x._version(), 3);
  Tensor y = x + 1;  // out-of-place ops leave both alone
  EXPECT_EQ(y._version(), 0);
  {
    NoGradGuard no_grad;  // the counter counts writes, with or without autograd
    const int64_t before = x._version();
    x.mul_(2);
    EXPECT_EQ(x._version(), before + 1);
  }
}

TEST(VersionCounter, BackwardRefusesAnInputWrittenAfterItWasSaved) {
  Tensor x = ones({3});
  Tensor w = ones({3}).requires_grad_();
  Tensor loss = (x * w).sum();  // dloss/dw = x, read at backward time
  x.mul_(2);
  const std::string m = message_of([&] { loss.backward(); });
  EXPECT_TRUE(contains(m, "modified by an inplace operation")) << m;
  EXPECT_TRUE(contains(m, "float32 tensor of shape [3], input 0 of MulBackward0")) << m;
  EXPECT_TRUE(contains(m, "is at version 1; expected version 0")) << m;
  EXPECT_FALSE(w.grad().defined());  // nothing half-accumulated
}

TEST(VersionCounter, AWriteThroughAViewOrADetachedOutputIsSeen) {
  Tensor x = ones({2, 3});
  Tensor w = ones({3}).requires_grad_();
  Tensor loss = (x * w).sum();
  x.select(0, 1).fill_(4);
  EXPECT_TRUE(contains(message_of([&] { loss.backward(); }), "input 0 of MulBackward0"));

  Tensor v = full({3}, 0.5).requires_grad_();
  Tensor e = exp(v);  // its backward reads the output
  Tensor loss2 = e.sum();
  e.detach().add_(1);  // detach() shares storage: the saved output changed
  EXPECT_TRUE(contains(message_of([&] { loss2.backward(); }), "modified by an inplace operation"));
  Tensor e3 = exp(v);
  Tensor loss4 = (e3 * 2).sum();  // the product keeps only the 2 (e3's gradient is g·2), as PyTorch's does
  e3.detach().zero_();
  EXPECT_TRUE(contains(message_of([&] { loss4.backward(); }), "output 0 of ExpBackward0"));
}

// relu's rule reads its output, as torch 1.13's: writing the input after the forward is harmless
// (torch gives [1, 1, 1]; tally refused it), writing the output is caught (tally missed it).
TEST(VersionCounter, ReluKeepsItsOutputNotItsInput) {
  Tensor w = ones({3}).requires_grad_();
  Tensor x = w * 1;
  Tensor y = relu(x);
  {
    NoGradGuard no_grad;
    x.add_(-5);
  }
  y.sum().backward();
  EXPECT_TRUE(w.grad().equal(ones({3})));
  Tensor y2 = relu(w * 1);
  Tensor loss = y2.sum();
  y2.detach().add_(1);
  EXPECT_TRUE(contains(message_of([&] { loss.backward(); }), "output 0 of ReluBackward0"));
}

// What torch 1.13 lets through because its rules do not save it: pow and clamp read their input,
// not their output; lerp reads neither operand; addcmul reads t1 and t2 only for each other's
// gradient. tally checked every tensor these nodes kept, and kept them all.
TEST(VersionCounter, OnlyWhatARuleReadsIsKeptAndChecked) {
  struct Case {
    const char* name;
    std::function<Tensor(const Tensor&, const Tensor&)> f;  // (w, an operand that needs no gradient)
    bool write_input, write_output, write_operand;
    std::vector<float> grad;  // torch 1.13's w.grad
  };
  const std::vector<Case> cases = {
      {"pow output", [](const Tensor& w, const Tensor&) { return w.pow(2); }, false, true, false, {2, 4, 6}},
      {"clamp output", [](const Tensor& w, const Tensor&) { return w.clamp(1.5); }, false, true, false, {0, 1, 1}},
      {"lerp both", [](const Tensor& w, const Tensor& e) { return w.lerp(e, 0.3); }, true, true, true, {0.7f, 0.7f, 0.7f}},
      {"addcmul both", [](const Tensor& w, const Tensor& t) { return w.addcmul(t, t); }, true, true, true, {1, 1, 1}},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.name);
    Tensor leaf = tensor({1.f, 2, 3}).requires_grad_();
    Tensor w = leaf * 1;  // a non-leaf, so that writing it in place is allowed
    Tensor operand = zeros({3});
    Tensor y = c.f(w, operand);
    {
      NoGradGuard no_grad;
      if (c.write_input) w.add_(1);
      if (c.write_output) y.add_(1);
      if (c.write_operand) operand.add_(1);
    }
    y.sum().backward();
    EXPECT_TRUE(allclose(leaf.grad(), tensor({c.grad[0], c.grad[1], c.grad[2]}))) << leaf.grad();
  }
  // Still caught: pow's input, which its rule reads.
  Tensor v = tensor({1.f, 2, 3}).requires_grad_();
  Tensor x = v * 1;
  Tensor loss = x.pow(2).sum();
  {
    NoGradGuard no_grad;
    x.add_(1);
  }
  EXPECT_TRUE(contains(message_of([&] { loss.backward(); }), "input 0 of PowBackward0"));
}

TEST(VersionCounter, RulesThatReadOnlyShapesAreNotChecked) {
  // add, sum and views place the gradient by shape alone, so writing their inputs in place is
  // harmless to backward, and, as in PyTorch, allowed.
  Tensor x = ones({3});
  Tensor w = ones({3}).requires_grad_();
  Tensor loss = (x + w).sum();
  x.mul_(5);
  loss.backward();
  EXPECT_TRUE(allclose(w.grad(), ones({3})));

  Tensor v = full({2, 3}, 2.0).requires_grad_();
  Tensor loss2 = (v.t().slice(0, 1).reshape({-1}) - 1).sum();  // views, sub, sum
  {
    NoGradGuard no_grad;
    v.add_(1);  // every node above keeps a handle on v's storage, none reads it
  }
  loss2.backward();
  EXPECT_TRUE(allclose(v.grad(), tensor({{0., 1, 1}, {0., 1, 1}})));

  // A rule that reads values is still checked through the same kind of graph.
  Tensor u = full({3}, 2.0).requires_grad_();
  Tensor loss3 = (u.view({3}) * u).sum();
  {
    NoGradGuard no_grad;
    u.add_(1);
  }
  EXPECT_TRUE(contains(message_of([&] { loss3.backward(); }), "of MulBackward0"));
}

TEST(VersionCounter, UntouchedGraphsAndTheOptimizerPatternStillWork) {
  Tensor x = tensor({1., 2, 3});
  Tensor w = ones({3}).requires_grad_();
  for (int step = 0; step < 3; ++step) {
    Tensor loss = (x * w).sum();
    loss.backward();
    EXPECT_TRUE(allclose(w.grad(), x));
    NoGradGuard no_grad;  // an SGD step writes the leaf in place between backward and the next forward
    w.sub_(w.grad() * 0.1);
    w.mutable_grad().zero_();
  }
  EXPECT_TRUE(allclose(w, ones({3}) - 0.3 * x));
  // Writing after backward is fine too: the graph is gone.
  Tensor y = ones({3});
  Tensor loss = (y * w).sum();
  loss.backward();
  y.add_(1);
  EXPECT_EQ(y._version(), 1);
}

TEST(InplaceInGraph, OperandThatRequiresGradIsRefusedNotDropped) {
  Tensor x = zeros({3});
  Tensor w = ones({3}).requires_grad_();
  const std::string m = message_of([&] { x.add_(w); });
  EXPECT_TRUE(contains(m, "in-place add_ writes a float32 tensor of shape [3] that does not require grad")) << m;
  EXPECT_TRUE(contains(m, "use the out-of-place op")) << m;
  EXPECT_EQ(x._version(), 0);  // refused before writing
  EXPECT_TRUE(allclose(x, zeros({3})));
  EXPECT_THROW(x.copy_(w), NotImplementedError);
  {
    NoGradGuard no_grad;
    x.add_(w);  // without autograd there is nothing to record
  }
  EXPECT_TRUE(allclose(x, ones({3})));
}

TEST(InplaceInGraph, LeavesAndNonLeavesGetClearErrors) {
  Tensor w = ones({3}).requires_grad_();
  EXPECT_TRUE(contains(message_of([&] { w.add_(1); }), "a leaf Variable that requires grad is being used in an in-place operation"));
  Tensor h = w * 2;
  const std::string m = message_of([&] { h.mul_(3); });
  EXPECT_TRUE(contains(m, "grad_fn MulBackward0")) << m;
  EXPECT_THROW(h.mul_(3), NotImplementedError);
}

}  // namespace
