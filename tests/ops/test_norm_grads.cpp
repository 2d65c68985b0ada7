// A norm's backward makes the gradients asked for (input, weight, bias) in one pass over g and x
// (the weight's and bias's as sums by pieces of rows, added up by a sum): every combination
// of requires_grad gives the gradients of the same maths composed of elementwise ops, in float64,
// on enough rows to be split into pieces between the threads, and on no rows and one.

#include <gtest/gtest.h>

#include <string>

#include "tally/tally.h"

namespace tally {
namespace {

Tensor composed_norm(const Tensor& x, const Tensor& w, const Tensor& b, bool rms, double eps) {
  const Tensor centered = rms ? x : x - x.mean({-1}, true);
  Tensor y = centered * rsqrt(square(centered).mean({-1}, true) + eps);
  if (w.defined()) y = y * w;
  return b.defined() ? y + b : y;
}

double max_abs_diff(const Tensor& a, const Tensor& b) { return (a - b).abs().max().item<double>(); }

TEST(NormGrads, EveryCombinationOfRequiresGrad) {
  Generator gen(11);
  const int64_t rows = 600, n = 301;
  const Tensor x0 = randn({rows, n}, TensorOptions(kFloat64), &gen), w0 = randn({n}, TensorOptions(kFloat64), &gen),
               b0 = randn({n}, TensorOptions(kFloat64), &gen), g = randn({rows, n}, TensorOptions(kFloat64), &gen);
  for (bool rms : {false, true}) {
    for (int mask = 1; mask < 8; ++mask) {
      const bool gx = mask & 1, gw = mask & 2, gb = mask & 4;
      if (rms && gb) continue;  // rms_norm has no bias
      const std::string what = std::string(rms ? "rms_norm" : "layer_norm") + " grads of" + (gx ? " x" : "") + (gw ? " w" : "") + (gb ? " b" : "");
      Tensor x = x0.clone().requires_grad_(gx), w = w0.clone().requires_grad_(gw), b = rms ? Tensor() : b0.clone().requires_grad_(gb);
      Tensor xr = x0.clone().requires_grad_(gx), wr = w0.clone().requires_grad_(gw), br = rms ? Tensor() : b0.clone().requires_grad_(gb);
      const Tensor y = rms ? rms_norm(x, {n}, w, 1e-5) : layer_norm(x, {n}, w, b, 1e-5);
      const Tensor yr = composed_norm(xr, wr, br, rms, 1e-5);
      EXPECT_LT(max_abs_diff(y, yr), 1e-12) << what;
      (y * g).sum().backward();
      (yr * g).sum().backward();
      const std::pair<const Tensor*, const Tensor*> pairs[] = {{&x, &xr}, {&w, &wr}, {&b, &br}};
      for (const auto& [got, want] : pairs) {
        if (!got->defined() || !got->requires_grad()) continue;
        ASSERT_TRUE(got->grad().defined()) << what;
        EXPECT_EQ(got->grad().sizes(), want->grad().sizes()) << what;
        EXPECT_LT(max_abs_diff(got->grad(), want->grad()), 1e-9) << what;
      }
    }
  }
}

TEST(NormGrads, BackwardOnTheLedger) {
  Generator gen(12);
  Tensor x = randn({64, 32}, {}, &gen).requires_grad_(), w = randn({32}, {}, &gen).requires_grad_(), b = randn({32}, {}, &gen).requires_grad_();
  accounting::FlopCounter counter;
  layer_norm(x, {32}, w, b).sum().backward();
  // ∂x 14 FLOPs per element and, in the same pass, the sums for ∂w (4) and ∂b (1)...
  const auto pass = counter.op("layer_norm_backward", accounting::Phase::Backward);
  EXPECT_EQ(pass.calls, 1);
  EXPECT_EQ(pass.flops, 64 * 32 * (14 + 4 + 1));
  // ...then one add per element of ∂w and ∂b and per piece of rows (one piece: 2048 elements are
  // below the elementwise grain), a sum each.
  const auto pieces = counter.op("sum", accounting::Phase::Backward);
  EXPECT_EQ(pieces.calls, 2);
  EXPECT_EQ(pieces.flops, 2 * 32);
}

TEST(NormGrads, NoRowsAndOneRow) {
  // No rows: the affine gradients are zeros.
  Tensor x = zeros({0, 5}).requires_grad_(), w = ones({5}).requires_grad_(), b = zeros({5}).requires_grad_();
  layer_norm(x, {5}, w, b).sum().backward();
  EXPECT_EQ(w.grad().abs().sum().item<double>(), 0.0);
  EXPECT_EQ(b.grad().abs().sum().item<double>(), 0.0);
  EXPECT_EQ(x.grad().sizes(), IntArrayRef({0, 5}));
  // One row that is the whole normalized shape, with the input trainable and frozen.
  for (bool input_grad : {true, false}) {
    Generator gen(13);
    Tensor x1 = randn({5}, TensorOptions(kFloat64), &gen).requires_grad_(input_grad);
    Tensor w1 = randn({5}, TensorOptions(kFloat64), &gen).requires_grad_(), b1 = randn({5}, TensorOptions(kFloat64), &gen).requires_grad_();
    Tensor w2 = w1.detach().clone().requires_grad_(), b2 = b1.detach().clone().requires_grad_();
    const Tensor g = randn({5}, TensorOptions(kFloat64), &gen);
    (layer_norm(x1, {5}, w1, b1, 1e-5) * g).sum().backward();
    (composed_norm(x1.detach(), w2, b2, false, 1e-5) * g).sum().backward();
    EXPECT_EQ(w1.grad().sizes(), IntArrayRef({5}));
    EXPECT_LT(max_abs_diff(w1.grad(), w2.grad()), 1e-12) << "input grad " << input_grad;
    EXPECT_LT(max_abs_diff(b1.grad(), b2.grad()), 1e-12) << "input grad " << input_grad;
  }
}

}  // namespace
}  // namespace tally
