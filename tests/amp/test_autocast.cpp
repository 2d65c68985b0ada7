// amp::AutocastGuard: each op in the table runs in its policy's dtype, a weight is cast once per
// guard, gradients come back to the float32 master weights exactly as an explicit cast would send
// them, and a bfloat16 Cruncher step's memory by category is the analytic figure, byte for byte.

#include <gtest/gtest.h>

#include <optional>
#include <vector>

#include "expect_error.h"
#include "tally/tally.h"

namespace tally::amp {
namespace {

int64_t live(const accounting::MemoryTracker& t, MemoryCategory c) { return t.allocated_bytes(c); }
int64_t peak(const accounting::MemoryTracker& t, MemoryCategory c) { return t.peak_allocated_bytes(c); }

bool same_values(const Tensor& a, const Tensor& b) {
  return a.dtype() == b.dtype() && a.sizes() == b.sizes() && equal(a, b);
}

TEST(Autocast, EachOpRunsInItsPolicysDtype) {
  Generator gen(1);
  const Tensor x = randn({4, 8}, {}, &gen), w = randn({8, 8}, {}, &gen), b = randn({8}, {}, &gen);
  const Tensor xb = x.to(kBFloat16);
  AutocastGuard autocast(kBFloat16);
  // Lower precision: matmul-class ops, whole composites included (linear's bias joins in bfloat16).
  EXPECT_EQ(matmul(x, w).dtype(), kBFloat16);
  EXPECT_EQ(nn::F::linear(x, w, b).dtype(), kBFloat16);
  EXPECT_EQ(einops::einsum({x, w}, "i j, j k -> i k").dtype(), kBFloat16);
  // Float32: softmax, norms, losses, reductions, whatever dtype they are given.
  EXPECT_EQ(softmax(xb, -1).dtype(), kFloat32);
  EXPECT_EQ(nn::F::layer_norm(xb, 1).dtype(), kFloat32);
  EXPECT_EQ(nn::F::rms_norm(xb, 1).dtype(), kFloat32);
  EXPECT_EQ(xb.sum().dtype(), kFloat32);
  EXPECT_EQ(xb.mean().dtype(), kFloat32);
  EXPECT_EQ(mse_loss(xb, x).dtype(), kFloat32);
  EXPECT_EQ(cross_entropy(xb, zeros({4}, TensorOptions(kInt64))).dtype(), kFloat32);
  // Not in the table: run on what they are given, with type promotion.
  EXPECT_EQ(gelu(xb).dtype(), kBFloat16);
  EXPECT_EQ((xb + x).dtype(), kFloat32);
  // float64 is left alone, as in PyTorch.
  EXPECT_EQ(matmul(x.to(kFloat64), w.to(kFloat64)).dtype(), kFloat64);
}

TEST(Autocast, ValuesAreThoseOfTheExplicitCasts) {
  Generator gen(2);
  const Tensor x = randn({16, 32}, {}, &gen), w = randn({24, 32}, {}, &gen), b = randn({24}, {}, &gen);
  const Tensor expected = nn::F::linear(x.to(kBFloat16), w.to(kBFloat16), b.to(kBFloat16));
  const Tensor s = randn({5, 7}, {}, &gen).to(kBFloat16);
  const Tensor expected_softmax = softmax(s.to(kFloat32), -1);
  AutocastGuard autocast(kBFloat16);
  EXPECT_TRUE(same_values(nn::F::linear(x, w, b), expected));
  EXPECT_TRUE(same_values(softmax(s, -1), expected_softmax));
}

TEST(Autocast, AWeightIsCastOncePerGuardAndCountsAsAWorkingCopy) {
  Generator gen(3);
  nn::Linear layer(64, 64, true, {}, &gen);
  const Tensor x = randn({8, 64}, {}, &gen);
  accounting::MemoryTracker tracker;
  accounting::FlopCounter counter;
  {
    AutocastGuard autocast(kBFloat16);
    Tensor y = layer.forward(layer.forward(x));  // the weight and bias used twice
    EXPECT_EQ(autocast.cached_casts(), 2);
    // Casts (the ledger's "_to_copy", as PyTorch's): x once, the weight once, the bias once; the
    // second use reads the cache.
    EXPECT_EQ(counter.op("_to_copy", accounting::Phase::Forward).calls, 3);
    EXPECT_EQ(live(tracker, MemoryCategory::WorkingCopies), 2 * (64 * 64 + 64));
    y.sum().backward();
  }
  EXPECT_EQ(live(tracker, MemoryCategory::WorkingCopies), 0);  // the guard and the graph let go
  EXPECT_EQ(layer.weight.grad().dtype(), kFloat32);
}

// set_data swaps a weight's storage (Module::to does) and keeps its version: the cast cached for
// the old values was handed out again, even for a new shape.
TEST(Autocast, AWeightGivenNewDataIsCastAgain) {
  Tensor w = ones({4, 8}).requires_grad_();
  const Tensor x = ones({2, 4});
  AutocastGuard autocast(kBFloat16);
  EXPECT_EQ(matmul(x, w).sum().item<float>(), 2 * 8 * 4);
  {
    NoGradGuard no_grad;
    w.set_data(full({4, 3}, 2.0));
  }
  const Tensor y = matmul(x, w);
  EXPECT_EQ(y.sizes(), IntArrayRef({2, 3}));
  EXPECT_EQ(y.sum().item<float>(), 2 * 3 * 4 * 2);
}

TEST(Autocast, GradientsReachTheMasterWeightsAsThroughExplicitCasts) {
  Generator gen(4);
  const Tensor w0 = randn({32, 16}, {}, &gen), x = randn({8, 32}, {}, &gen), t = randn({8, 16}, {}, &gen);
  Tensor w = w0.clone().requires_grad_(), v = w0.clone().requires_grad_();
  {
    AutocastGuard autocast(kBFloat16);
    mse_loss(gelu(matmul(x, w)), t).backward();
  }
  mse_loss(gelu(matmul(x.to(kBFloat16), v.to(kBFloat16))).to(kFloat32), t).backward();
  EXPECT_EQ(w.grad().dtype(), kFloat32);
  EXPECT_TRUE(same_values(w.grad(), v.grad()));
}

// One guard around a whole training loop: each step must see the weights the last step wrote
// (the cached copy was stale, and its freed graph raised on the second backward) and train as a
// guard per forward does.
TEST(Autocast, AGuardAroundTheLoopSeesEachStepsWeights) {
  Generator gen(6);
  const Tensor x = randn({4, 8}, {}, &gen), w0 = randn({3, 8}, {}, &gen);
  const Tensor target = tensor({0, 1, 2, 0}, TensorOptions(kInt64));
  auto train = [&](bool one_guard) {
    Tensor w = w0.clone().requires_grad_();
    optim::SGD sgd({w}, optim::SGDOptions(1.0));
    std::optional<AutocastGuard> outer;
    if (one_guard) outer.emplace(kBFloat16);
    std::vector<double> losses;
    for (int step = 0; step < 4; ++step) {
      Tensor loss;
      {
        std::optional<AutocastGuard> inner;
        if (!one_guard) inner.emplace(kBFloat16);
        loss = cross_entropy(nn::F::linear(x, w), target);
      }
      loss.backward();
      sgd.step();
      sgd.zero_grad();
      losses.push_back(loss.item<double>());
    }
    return losses;
  };
  const std::vector<double> per_forward = train(false), whole_loop = train(true);
  EXPECT_EQ(whole_loop, per_forward);
  EXPECT_LT(whole_loop.back(), whole_loop.front());
}

// A forward under NoGradGuard (a metric) inside the guard, then a training forward: the weights
// still get their gradients (the copy made without gradient mode carried no history).
TEST(Autocast, ACastMadeWithoutGradientModeIsNotReusedWithIt) {
  Generator gen(7);
  nn::Linear layer(8, 3, true, {}, &gen);
  const Tensor x = randn({4, 8}, {}, &gen);
  AutocastGuard autocast(kBFloat16);
  {
    NoGradGuard no_grad;
    layer.forward(x);
  }
  layer.forward(x).sum().backward();
  ASSERT_TRUE(layer.weight.grad().defined());
  ASSERT_TRUE(layer.bias.grad().defined());
  EXPECT_EQ(layer.weight.grad().dtype(), kFloat32);
}

TEST(Autocast, BackwardRunsWithoutCasts) {
  // A float32 graph whose backward runs inside a guard: its rules' matmuls must stay float32.
  Generator gen(5);
  const Tensor w0 = randn({16, 16}, {}, &gen), x = randn({4, 16}, {}, &gen);
  Tensor w = w0.clone().requires_grad_(), v = w0.clone().requires_grad_();
  matmul(x, v).sum().backward();
  Tensor y = matmul(x, w);
  AutocastGuard autocast(kBFloat16);
  y.sum().backward();
  EXPECT_TRUE(same_values(w.grad(), v.grad()));
}

TEST(Autocast, GuardsNestAndADisabledOneTurnsItOff) {
  const Tensor a = ones({2, 2}), b = ones({2, 2});
  AutocastGuard outer(kBFloat16);
  {
    AutocastGuard off(kBFloat16, /*enabled=*/false);
    EXPECT_EQ(matmul(a, b).dtype(), kFloat32);
    {
      AutocastGuard half(kFloat16);
      EXPECT_EQ(matmul(a, b).dtype(), kFloat16);
    }
    EXPECT_EQ(matmul(a, b).dtype(), kFloat32);
  }
  EXPECT_EQ(matmul(a, b).dtype(), kBFloat16);
}

TEST(Autocast, RefusesAPrecisionThatIsNotLow) {
  EXPECT_THROW(AutocastGuard{kFloat32}, TypeError);
  EXPECT_NE(test::message_of([] { AutocastGuard g(kFloat32); }).find("must be bfloat16 or float16, got float32"), std::string::npos);
}

TEST(Autocast, TheTableNamesEachOpOnce) {
  std::vector<std::string_view> all = autocast_ops(CastPolicy::LowerPrecision);
  for (std::string_view op : autocast_ops(CastPolicy::Float32)) all.push_back(op);
  std::sort(all.begin(), all.end());
  EXPECT_EQ(std::adjacent_find(all.begin(), all.end()), all.end());
  EXPECT_EQ(autocast_policy("matmul"), CastPolicy::LowerPrecision);
  EXPECT_EQ(autocast_policy("softmax"), CastPolicy::Float32);
  EXPECT_EQ(autocast_policy("gelu"), std::nullopt);
}

TEST(AutocastMemory, ABfloat16CruncherStepIsTheAnalyticFigure) {
  // Master weights float32 (4 bytes a parameter), working copies bfloat16 (2), gradients float32
  // on the master weights (4), AdamW state 2 × float32 (8); activations what the backward rules
  // read: each matmul's bfloat16 input for its weight's gradient — x's cast and h_1..h_L [B, D] —
  // and, in the float32 loss, pred − y [B] (square's rule) and the mean's 1/B.
  const int64_t D = 128, L = 3, B = 32;
  const int64_t P = L * D * D + D;
  Generator gen(6);
  nn::Cruncher model(D, L, {}, &gen);
  optim::AdamW optimizer(model.parameters(), optim::AdamWOptions(1e-3));
  const Tensor x = randn({B, D}, {}, &gen), y = randn({B}, {}, &gen);
  accounting::MemoryTracker tracker;
  const int64_t activations = 2 * (L + 1) * B * D + 4 * (B + 1);
  Tensor loss;
  {
    AutocastGuard autocast(kBFloat16);
    loss = mse_loss(model.forward(x), y);
    EXPECT_EQ(loss.dtype(), kFloat32);
    EXPECT_EQ(live(tracker, MemoryCategory::Parameters), 4 * P);
    EXPECT_EQ(live(tracker, MemoryCategory::WorkingCopies), 2 * P);
    EXPECT_EQ(live(tracker, MemoryCategory::Activations), activations);
  }
  // The first layer's copy goes with the guard: its matmul's input x needs no gradient, so no
  // rule reads that weight; the other copies stay while their nodes keep them for backward.
  EXPECT_EQ(live(tracker, MemoryCategory::WorkingCopies), 2 * (P - D * D));
  loss.backward();
  EXPECT_EQ(live(tracker, MemoryCategory::WorkingCopies), 0);
  EXPECT_EQ(live(tracker, MemoryCategory::Activations), 0);
  EXPECT_EQ(live(tracker, MemoryCategory::Gradients), 4 * P);
  for (const Tensor& p : model.parameters()) EXPECT_EQ(p.grad().dtype(), kFloat32);
  optimizer.step();
  EXPECT_EQ(live(tracker, MemoryCategory::OptimizerState), 8 * P);
  EXPECT_EQ(peak(tracker, MemoryCategory::Parameters), 4 * P);
  EXPECT_EQ(peak(tracker, MemoryCategory::WorkingCopies), 2 * P);
  EXPECT_EQ(peak(tracker, MemoryCategory::Activations), activations);
  EXPECT_EQ(peak(tracker, MemoryCategory::Gradients), 4 * P);
}

}  // namespace
}  // namespace tally::amp
