// A norm's backward is one op that writes the gradients asked for (input, weight, bias) in one
// pass: every combination of requires_grad gives the gradients of the same maths composed of
// elementwise ops, in float64, on enough rows to be split into pieces between the threads.

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

TEST(NormGrads, BackwardIsOneOpOnTheLedger) {
  Generator gen(12);
  Tensor x = randn({64, 32}, {}, &gen).requires_grad_(), w = randn({32}, {}, &gen).requires_grad_(), b = randn({32}, {}, &gen).requires_grad_();
  accounting::FlopCounter counter;
  layer_norm(x, {32}, w, b).sum().backward();
  const auto row = counter.op("layer_norm_backward", accounting::Phase::Backward);
  EXPECT_EQ(row.calls, 1);
  // ∂x 14, ∂w 4 and ∂b 1 FLOPs per element (the op's cost rule).
  EXPECT_EQ(row.flops, 64 * 32 * (14 + 4 + 1));
}

}  // namespace
}  // namespace tally
