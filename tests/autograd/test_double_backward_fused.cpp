// The ops whose backward is one fused kernel (layer_norm, rms_norm, cross_entropy, attention) run
// their composed rule when backward records (create_graph): its first-order gradients must be
// the fused kernel's, and second derivatives exist (second-order gradcheck in test_gradcheck.cpp).

#include <gtest/gtest.h>

#include <functional>
#include <string>

#include "tally/autograd/engine.h"
#include "tally/tally.h"

namespace tally {
namespace {

/// Gradients of f's sum of squares with respect to `inputs`, by a plain backward (the fused
/// kernels) and by a recording one (the composed rule).
void expect_same_gradients(const std::string& what, const std::function<Tensor(const TensorList&)>& f, const TensorList& inputs,
                           double rtol) {
  SCOPED_TRACE(what);
  const Tensor y = f(inputs);
  const Tensor loss = (y * y).sum();
  const TensorList fused = autograd::grad({loss}, inputs, {}, /*retain_graph=*/true);
  const TensorList composed = autograd::grad({loss}, inputs, {}, /*retain_graph=*/true, /*create_graph=*/true);
  ASSERT_EQ(fused.size(), composed.size());
  for (size_t i = 0; i < fused.size(); ++i) {
    EXPECT_TRUE(composed[i].requires_grad()) << "input " << i << ": the recorded gradient has history";
    EXPECT_TRUE(composed[i].detach().allclose(fused[i], rtol, rtol)) << "input " << i << "\n" << (composed[i].detach() - fused[i]).abs().max();
  }
}

TEST(DoubleBackwardFused, ComposedRuleGivesTheFusedGradients) {
  Generator gen(5);
  auto leaf = [&](IntArrayRef sizes) { return randn(sizes, kFloat32, &gen).requires_grad_(); };
  const Tensor x = leaf({6, 32}), w = leaf({32}), b = leaf({32});
  expect_same_gradients("layer_norm", [](const TensorList& v) { return layer_norm(v[0], {32}, v[1], v[2]); }, {x, w, b}, 1e-4);
  expect_same_gradients("rms_norm", [](const TensorList& v) { return rms_norm(v[0], {32}, v[1]); }, {x, w}, 1e-4);
  const Tensor target = randint(0, 32, {6}, kInt64, &gen);
  expect_same_gradients("cross_entropy", [&](const TensorList& v) { return cross_entropy(v[0], target); }, {x}, 1e-4);
  const Tensor q = leaf({2, 3, 16, 8}), k = leaf({2, 3, 16, 8}), v = leaf({2, 3, 16, 8});
  expect_same_gradients("scaled_dot_product_attention",
                        [](const TensorList& t) { return scaled_dot_product_attention(t[0], t[1], t[2], /*is_causal=*/true); }, {q, k, v}, 1e-4);
  const Tensor qkv = leaf({2, 16, 3, 2, 8});
  expect_same_gradients("scaled_dot_product_attention_packed",
                        [](const TensorList& t) { return scaled_dot_product_attention_packed(t[0], /*is_causal=*/true); }, {qkv}, 1e-4);
}

TEST(DoubleBackwardFused, AHessianVectorProductThroughAttention) {
  // d/dv of (∂L/∂q · u) by a second backward equals central differences of ∂L/∂q · u.
  Generator gen(9);
  const Tensor q = randn({1, 2, 5, 4}, kFloat64, &gen).requires_grad_(), k = randn({1, 2, 5, 4}, kFloat64, &gen);
  const Tensor v = randn({1, 2, 5, 4}, kFloat64, &gen).requires_grad_();
  const Tensor u = randn({1, 2, 5, 4}, kFloat64, &gen);
  auto dq_dot_u = [&](const Tensor& values, bool create) {
    const Tensor out = scaled_dot_product_attention(q, k, values, true);
    const Tensor dq = autograd::grad({(out * out).sum()}, {q}, {}, std::nullopt, create)[0];
    return (dq * u).sum();
  };
  const Tensor hvp = autograd::grad({dq_dot_u(v, true)}, {v})[0];
  const double h = 1e-6;
  Tensor numeric = zeros_like(v);
  for (int64_t i = 0; i < v.numel(); ++i) {
    Tensor dv = zeros({v.numel()}, kFloat64);
    dv[i].fill_(h);
    dv = dv.view(v.sizes());
    const double plus = dq_dot_u((v + dv).detach(), false).item<double>(), minus = dq_dot_u((v - dv).detach(), false).item<double>();
    numeric.view({-1})[i].fill_((plus - minus) / (2 * h));
  }
  EXPECT_TRUE(hvp.allclose(numeric, 1e-5, 1e-7)) << (hvp - numeric).abs().max();
}

}  // namespace
}  // namespace tally
