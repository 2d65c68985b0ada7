// nn::F::scaled_dot_product_attention with attn_mask and dropout_p, PyTorch 2.x's arguments (torch
// 1.13 has no such function; the differential tests compare the masked form with its math path):
// a bool mask equal to the causal one gives the fused causal op's output; rows with every key
// masked give zeros and pass no gradient; dropout drops probabilities, not outputs; bad masks are
// refused with their shapes and dtypes named.

#include <gtest/gtest.h>

#include <limits>

#include "expect_error.h"
#include "tally/tally.h"

namespace tally {
namespace {

using test::expect_error;

TEST(AttentionMask, ACausalBoolMaskGivesTheCausalOpsOutputAndGradients) {
  Generator g(11);
  const Tensor q0 = randn({2, 3, 9, 8}, {}, &g), k0 = randn({2, 3, 9, 8}, {}, &g), v0 = randn({2, 3, 9, 4}, {}, &g);
  const Tensor tril = ones({9, 9}, TensorOptions().dtype(kBool)).tril();
  Tensor q1 = q0.clone().requires_grad_(), k1 = k0.clone().requires_grad_(), v1 = v0.clone().requires_grad_();
  Tensor q2 = q0.clone().requires_grad_(), k2 = k0.clone().requires_grad_(), v2 = v0.clone().requires_grad_();
  const Tensor fused = nn::F::scaled_dot_product_attention(q1, k1, v1, std::nullopt, 0.0, true);
  const Tensor masked = nn::F::scaled_dot_product_attention(q2, k2, v2, tril);
  EXPECT_TRUE(allclose(fused.detach(), masked.detach(), 1e-5, 1e-6));
  (fused * v0.sum(-1, true).expand({2, 3, 9, 4})).sum().backward();
  (masked * v0.sum(-1, true).expand({2, 3, 9, 4})).sum().backward();
  EXPECT_TRUE(allclose(q1.grad(), q2.grad(), 1e-5, 1e-6));
  EXPECT_TRUE(allclose(k1.grad(), k2.grad(), 1e-5, 1e-6));
  EXPECT_TRUE(allclose(v1.grad(), v2.grad(), 1e-5, 1e-6));
}

// PyTorch 2.5's _safe_softmax: a query with no key left attends to nothing, where plain softmax
// gives NaN; a float mask of −inf does the same as a bool one.
TEST(AttentionMask, ARowWithEveryKeyMaskedGivesZerosAndNoGradient) {
  Generator g(12);
  Tensor q = randn({1, 4, 8}, {}, &g).requires_grad_(), k = randn({1, 6, 8}, {}, &g).requires_grad_(),
         v = randn({1, 6, 3}, {}, &g).requires_grad_();
  Tensor mask = ones({4, 6}, TensorOptions().dtype(kBool));
  mask.index_put_({2}, false);
  const Tensor y = nn::F::scaled_dot_product_attention(q, k, v, mask);
  EXPECT_TRUE(y.index({0, 2}).eq(0.0).all().item<bool>());
  EXPECT_FALSE((y != y).any().item<bool>());
  y.sum().backward();
  EXPECT_TRUE(q.grad().index({0, 2}).eq(0.0).all().item<bool>());
  for (const Tensor* t : {&q, &k, &v}) EXPECT_FALSE((t->grad() != t->grad()).any().item<bool>());

  // An additive mask of −inf: the same output, and no NaN reaches any gradient (softmax's
  // backward reads its output, NaN in such a row unless the row is zeroed before it too).
  Tensor additive = zeros({4, 6}).masked_fill(mask == false, -std::numeric_limits<double>::infinity()).requires_grad_();
  Tensor q2 = q.detach().clone().requires_grad_(), k2 = k.detach().clone().requires_grad_(), v2 = v.detach().clone().requires_grad_();
  const Tensor y2 = nn::F::scaled_dot_product_attention(q2, k2, v2, additive);
  EXPECT_TRUE(y2.detach().equal(y.detach()));
  y2.sum().backward();
  for (const Tensor* t : {&q2, &k2, &v2, &additive}) EXPECT_FALSE((t->grad() != t->grad()).any().item<bool>());
  EXPECT_TRUE(q2.grad().allclose(q.grad()) && k2.grad().allclose(k.grad()) && v2.grad().allclose(v.grad()));
  EXPECT_TRUE(additive.grad().index({2}).eq(0.0).all().item<bool>());
}

// Dropout zeroes probabilities and scales the kept ones by 1/(1 − p): with p = 1 nothing is left;
// the same generator state draws the same dropout; averaged over many draws the output is the
// undropped one's.
TEST(AttentionMask, DropoutDropsProbabilities) {
  Generator g(13);
  const Tensor q = randn({2, 5, 4}, {}, &g), k = randn({2, 7, 4}, {}, &g), v = randn({2, 7, 3}, {}, &g);
  EXPECT_TRUE(nn::F::scaled_dot_product_attention(q, k, v, std::nullopt, 1.0).eq(0.0).all().item<bool>());
  Generator a(5), b(5);
  const Tensor ya = nn::F::scaled_dot_product_attention(q, k, v, std::nullopt, 0.5, true, std::nullopt, &a);
  const Tensor yb = nn::F::scaled_dot_product_attention(q, k, v, std::nullopt, 0.5, true, std::nullopt, &b);
  EXPECT_TRUE(ya.equal(yb));
  const Tensor plain = nn::F::scaled_dot_product_attention(q, k, v, std::nullopt, 0.0, true);
  EXPECT_FALSE(ya.equal(plain));
  Tensor sum = zeros_like(plain);
  const int draws = 4000;
  for (int i = 0; i < draws; ++i) sum = sum + nn::F::scaled_dot_product_attention(q, k, v, std::nullopt, 0.5, true, std::nullopt, &a);
  // Each output is a sum of up to 7 terms each kept with probability 1/2: the mean of 4000 draws
  // is within a few hundredths of the expectation.
  EXPECT_LT((sum / draws - plain).abs().max().item<double>(), 0.08);
}

TEST(AttentionMask, BadMasksAndDropoutAreRefused) {
  const Tensor q = zeros({2, 5, 4}), k = zeros({2, 7, 4}), v = zeros({2, 7, 3});
  expect_error<ValueError>([&] { nn::F::scaled_dot_product_attention(q, k, v, ones({5, 6}, TensorOptions().dtype(kBool))); },
                           {"attn_mask of shape [5, 6] does not broadcast to the scores' shape [2, 5, 7]", "query [2, 5, 4], key [2, 7, 4]"});
  expect_error<ValueError>([&] { nn::F::scaled_dot_product_attention(q, k, v, ones({3, 2, 5, 7}, TensorOptions().dtype(kBool))); },
                           {"attn_mask of shape [3, 2, 5, 7] does not broadcast to the scores' shape [2, 5, 7]"});
  expect_error<TypeError>([&] { nn::F::scaled_dot_product_attention(q, k, v, zeros({5, 7}, TensorOptions().dtype(kFloat64))); },
                          {"Expected attn_mask dtype to be bool or float or to match query dtype", "float64", "float32"});
  expect_error<TypeError>([&] { nn::F::scaled_dot_product_attention(q, k, v, zeros({5, 7}, TensorOptions().dtype(kInt64))); },
                          {"attn_mask.dtype: int64"});
  expect_error<ValueError>([&] { nn::F::scaled_dot_product_attention(q, k, v, zeros({5, 7}), 0.0, true); },
                           {"Explicit attn_mask should not be set when is_causal=True", "[5, 7]"});
  expect_error<ValueError>([&] { nn::F::scaled_dot_product_attention(q, k, v, std::nullopt, 1.5); },
                           {"dropout_p has to be between 0 and 1, but got 1.5"});
  // The fused op's own checks, on the composed path too.
  expect_error<ValueError>([&] { nn::F::scaled_dot_product_attention(q, zeros({2, 7, 3}), v, zeros({5, 7})); },
                           {"must share E (the last dim)"});
  expect_error<ValueError>([&] { nn::F::scaled_dot_product_attention(q, k, v, zeros({5, 7}), 0.0, false, 0.0); },
                           {"the scale must be positive and finite, got 0"});
}

// The composed path's ops are on the ledger: the two products' FLOPs, 2·L·S·(E + Ev) per batch.
TEST(AttentionMask, TheComposedPathsProductsAreOnTheLedger) {
  const Tensor q = zeros({2, 5, 4}), k = zeros({2, 7, 4}), v = zeros({2, 7, 3});
  accounting::FlopCounter counter;
  nn::F::scaled_dot_product_attention(q, k, v, ones({5, 7}, TensorOptions().dtype(kBool)));
  EXPECT_EQ(counter.op("matmul", accounting::Phase::Forward).flops, 2 * 2 * 5 * 7 * (4 + 3));
}

}  // namespace
}  // namespace tally
