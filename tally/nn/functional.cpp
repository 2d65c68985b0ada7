#include "tally/nn/functional.h"

#include <cmath>

#include "tally/ops/apply.h"
#include "tally/ops/creation.h"
#include "tally/ops/elementwise.h"
#include "tally/ops/matmul.h"
#include "tally/ops/normalization.h"
#include "tally/ops/random.h"
#include "tally/ops/reduce.h"
#include "tally/ops/softmax.h"

namespace tally::nn::functional {

namespace {
/// The last `n` sizes of x: the shape a norm over its last n dims normalizes.
IntArrayRef last_sizes(const Tensor& x, int64_t n, const char* op) {
  TALLY_CHECK(n >= 1 && n <= x.dim(), op, ": cannot normalise over the last ", n, " dims of a tensor of shape ", x.sizes());
  return {x.sizes().data() + (x.dim() - n), static_cast<size_t>(n)};
}
}  // namespace

Tensor linear(const Tensor& x_, const Tensor& weight_, const Tensor& bias_) {
  Tensor x = x_, weight = weight_, bias = bias_;
  const ops::AutocastRegion autocast("linear", {&x, &weight, &bias});
  TALLY_CHECK(weight.dim() == 2 && x.dim() >= 1 && x.size(-1) == weight.size(1), "linear: input of shape ", x.sizes(),
              " does not fit weight of shape ", weight.sizes(), " (expected input [..., ", weight.dim() == 2 ? weight.size(1) : -1, "])");
  Tensor y = matmul(x, weight.t());
  return bias.defined() ? y + bias : y;
}

Tensor layer_norm(const Tensor& x, int64_t normalized_dims, const Tensor& weight, const Tensor& bias, double eps) {
  return tally::layer_norm(x, last_sizes(x, normalized_dims, "layer_norm"), weight, bias, eps);
}

Tensor rms_norm(const Tensor& x, int64_t normalized_dims, const Tensor& weight, std::optional<double> eps) {
  return tally::rms_norm(x, last_sizes(x, normalized_dims, "rms_norm"), weight, eps);
}

Tensor dropout(const Tensor& x, double p, bool training, Generator* gen) {
  TALLY_CHECK(p >= 0.0 && p <= 1.0, "dropout probability has to be between 0 and 1, but got ", p);
  if (!training || p == 0.0) return x;
  if (p == 1.0) return x * 0.0;
  Tensor keep = (rand(x.sizes(), TensorOptions(x.dtype()).device(x.device()), gen) >= p).to(x.dtype());
  return x * (keep * (1.0 / (1.0 - p)));
}

Tensor scaled_dot_product_attention(const Tensor& q_, const Tensor& k_, const Tensor& v_, bool is_causal) {
  Tensor q = q_, k = k_, v = v_;
  const ops::AutocastRegion autocast("scaled_dot_product_attention", {&q, &k, &v});
  TALLY_CHECK(q.dim() >= 2 && k.dim() == q.dim() && v.dim() == q.dim() && q.size(-1) == k.size(-1) && k.size(-2) == v.size(-2),
              "scaled_dot_product_attention: q ", q.sizes(), ", k ", k.sizes(), " and v ", v.sizes(),
              " must be [..., T, d] with matching d (q, k) and key length (k, v)");
  const double scale = 1.0 / std::sqrt(static_cast<double>(q.size(-1)));
  // Heads cut from a packed projection ([b, T, 3, h, d] permuted) are strided matrices whose
  // batch dims do not merge, which each product, forward and backward, would pack again: packed
  // once here instead. The graph keeps these copies in place of the projection (the same bytes).
  q = q.contiguous();
  k = k.contiguous();
  v = v.contiguous();
  return matmul(attention_softmax(matmul(q, k.transpose(-2, -1)), scale, is_causal), v);
}

}  // namespace tally::nn::functional
