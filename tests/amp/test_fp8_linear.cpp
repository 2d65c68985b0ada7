// amp::fp8_linear: the forward and both gradients are exactly the FP8 products the recipe defines
// (E4M3 input and weight, E5M2 output gradient, each with its delayed scale), near the float32
// layer; the scales follow the amaxes from one forward to the next; the state round-trips; a model
// converted to FP8 trains and runs on the meta device.

#include <gtest/gtest.h>

#include "expect_error.h"
#include "tally/tally.h"

namespace tally::amp {
namespace {

Tensor scale_tensor(double s) { return scalar_tensor(s, TensorOptions(kFloat32)); }
/// Saturating cast of x · scale to `fp8`, as the recipe defines it.
Tensor cast_fp8(const Tensor& x, double scale, Dtype fp8) {
  const double max = finfo(fp8).max;
  return clamp(x * scale, -max, max).to(fp8);
}
double abs_max(const Tensor& t) { return t.abs().amax().to(kFloat64).item<double>(); }
bool same_values(const Tensor& a, const Tensor& b) { return a.dtype() == b.dtype() && a.sizes() == b.sizes() && equal(a, b); }
double relative_error(const Tensor& a, const Tensor& b) {
  const Tensor d = a.to(kFloat64) - b.to(kFloat64);
  return std::sqrt(d.square().sum().item<double>() / b.to(kFloat64).square().sum().item<double>());
}

TEST(Fp8Linear, ForwardAndGradientsAreTheRecipesProducts) {
  Generator gen(1);
  const Tensor x0 = randn({2, 8, 64}, {}, &gen), w0 = randn({32, 64}, {}, &gen) * 0.1, b0 = randn({32}, {}, &gen), g = randn({2, 8, 32}, {}, &gen);
  Fp8LinearState state;
  // Step 1 casts with the initial scales (1); step 2 with the scales from step 1's amaxes.
  for (int step = 1; step <= 2; ++step) {
    Tensor x = x0.clone().requires_grad_(), w = w0.clone().requires_grad_(), b = b0.clone().requires_grad_();
    Tensor y = fp8_linear(x, w, b, state);
    ASSERT_EQ(y.dtype(), kFloat32);
    ASSERT_EQ(y.sizes(), IntArrayRef({2, 8, 32}));
    y.backward(g);
    // The scales this step cast with: the forward updated them first, from the earlier amaxes.
    const double sx = state.input.scale(), sw = state.weight.scale(), sg = state.grad_output.scale();
    if (step == 1) {
      EXPECT_EQ(sx, 1.0);
      EXPECT_EQ(sg, 1.0);
    } else {
      EXPECT_DOUBLE_EQ(sx, 448.0 / abs_max(x0));
      EXPECT_DOUBLE_EQ(sw, 448.0 / abs_max(w0));
      EXPECT_DOUBLE_EQ(sg, 57344.0 / abs_max(g));
    }

    const Tensor xq = cast_fp8(x0.reshape({16, 64}), sx, kFloat8_e4m3fn), wq = cast_fp8(w0, sw, kFloat8_e4m3fn);
    const Tensor gq = cast_fp8(g.reshape({16, 32}), sg, kFloat8_e5m2);
    const Tensor expected_y = scaled_mm(xq, wq.t(), scale_tensor(1 / sx), scale_tensor(1 / sw), kFloat32).view({2, 8, 32}) + b0;
    EXPECT_TRUE(same_values(y.detach(), expected_y)) << "step " << step;
    EXPECT_TRUE(same_values(x.grad(), scaled_mm(gq, wq, scale_tensor(1 / sg), scale_tensor(1 / sw), kFloat32).view({2, 8, 64})));
    EXPECT_TRUE(same_values(w.grad(), scaled_mm(gq.t(), xq, scale_tensor(1 / sg), scale_tensor(1 / sx), kFloat32)));
    EXPECT_TRUE(same_values(b.grad(), g.sum({0, 1})));

    // Near the float32 layer: E4M3 keeps 3 mantissa bits, so a few percent.
    EXPECT_LT(relative_error(y.detach(), nn::F::linear(x0, w0, b0)), 0.05) << "step " << step;
  }
}

// A float32 result is accumulated in float32, as cuBLASLt's (torch._scaled_mm) is: tally rounded
// it to bfloat16 first, an error of one bfloat16 step (0.03 at 4) in the forward and both gradients.
TEST(Fp8Linear, AFloat32ProductIsAccumulatedInFloat32) {
  Generator gen(2);
  const Tensor a = (randn({32, 256}, {}, &gen) * 4).to(kFloat8_e4m3fn), b = (randn({256, 48}, {}, &gen) * 4).to(kFloat8_e4m3fn);
  const Tensor exact = matmul(a.to(kFloat64), b.to(kFloat64)) * 0.25 * 0.5;
  const Tensor y = scaled_mm(a, b, scale_tensor(0.25), scale_tensor(0.5), kFloat32);
  EXPECT_LT((y.to(kFloat64) - exact).abs().amax().item<double>() / exact.abs().amax().item<double>(), 1e-6);
  const Tensor y16 = scaled_mm(a, b, scale_tensor(0.25), scale_tensor(0.5), kBFloat16);  // the bfloat16 path rounds to bfloat16
  EXPECT_GT((y16.to(kFloat64) - exact).abs().amax().item<double>() / exact.abs().amax().item<double>(), 1e-4);
}

TEST(Fp8Linear, UnderAutocastTheProductIsBfloat16AndTheNodeKeepsFp8Copies) {
  Generator gen(2);
  Tensor w = randn({64, 64}, {}, &gen).requires_grad_();
  const Tensor x = randn({32, 64}, {}, &gen).requires_grad_();
  Fp8LinearState state;
  accounting::MemoryTracker tracker;
  Tensor y;
  {
    AutocastGuard autocast(kBFloat16);
    y = fp8_linear(x, w, {}, state);
  }
  EXPECT_EQ(y.dtype(), kBFloat16);
  // Kept for backward: the FP8 input (an activation) and the FP8 weight (the master's working
  // copy), one byte an element; no float32 or bfloat16 copy.
  EXPECT_EQ(tracker.allocated_bytes(MemoryCategory::Activations), 32 * 64);
  EXPECT_EQ(tracker.allocated_bytes(MemoryCategory::WorkingCopies), 64 * 64);
  y.to(kFloat32).sum().backward();
  EXPECT_EQ(w.grad().dtype(), kFloat32);
  EXPECT_EQ(x.grad().dtype(), kFloat32);
}

TEST(Fp8Linear, StateRoundTripsAndRefusesAStrangersState) {
  Generator gen(3);
  nn::TransformerLM model({.vocab_size = 64, .context_length = 8, .d_model = 16, .num_layers = 2, .num_heads = 2}, {}, &gen);
  EXPECT_EQ(convert_to_fp8(model), 2 * 4);  // per block: qkv, proj, fc, proj
  const Tensor ids = randint(64, {2, 8}, TensorOptions(kInt64), &gen);
  model.loss(ids, ids).backward();
  model.loss(ids, ids).backward();
  const StateDict saved = fp8_state_dict(model);
  EXPECT_EQ(saved.size(), 8u * 7);
  EXPECT_TRUE(saved.contains("blocks.0.attn.qkv.input.scale"));

  Generator gen2(4);
  nn::TransformerLM other({.vocab_size = 64, .context_length = 8, .d_model = 16, .num_layers = 2, .num_heads = 2}, {}, &gen2);
  convert_to_fp8(other);
  load_fp8_state_dict(other, saved);
  const StateDict loaded = fp8_state_dict(other);
  for (const auto& [k, t] : saved) EXPECT_TRUE(same_values(loaded.at(k), t)) << k;

  StateDict extra = saved;
  extra.insert("blocks.9.mlp.fc.input.scale", scalar_tensor(1.0, TensorOptions(kFloat64)));
  EXPECT_NE(test::message_of([&] { load_fp8_state_dict(other, extra); }).find("belong to no FP8 layer"), std::string::npos);
}

TEST(Fp8Linear, RunsOnTheMetaDevice) {
  nn::Linear layer(64, 32, true, TensorOptions().device(kMeta));
  convert_to_fp8(layer);
  accounting::FlopCounter counter;
  Tensor y = layer.forward(empty({16, 64}, TensorOptions().device(kMeta)));
  EXPECT_EQ(y.sizes(), IntArrayRef({16, 32}));
  EXPECT_EQ(counter.op("fp8_linear", accounting::Phase::Forward).flops, 2 * 16 * 64 * 32);
}

TEST(Fp8Linear, RefusesAMismatchedInput) {
  Fp8LinearState state;
  EXPECT_NE(test::message_of([&] { fp8_linear(ones({4, 8}), ones({16, 32}), {}, state); }).find("does not fit weight of shape [16, 32]"),
            std::string::npos);
}

}  // namespace
}  // namespace tally::amp
