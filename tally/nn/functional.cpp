#include "tally/nn/functional.h"

#include <cmath>
#include <limits>

#include "tally/core/geometry.h"
#include "tally/ops/apply.h"
#include "tally/ops/attention.h"
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
  // A 1-D weight without a bias is a dot product over the last dim, as PyTorch's x @ w.t().
  if (weight.dim() == 1 && !bias.defined() && x.dim() >= 1 && x.size(-1) == weight.size(0)) return matmul(x, weight);
  TALLY_CHECK(weight.dim() == 2, "linear: weight must be a matrix [out_features, in_features]", bias.defined() ? " (with a bias)" : "",
              ", got weight of shape ", weight.sizes(), " for input of shape ", x.sizes());
  TALLY_CHECK(x.dim() >= 1 && x.size(-1) == weight.size(1), "linear: input of shape ", x.sizes(), " does not fit weight of shape ",
              weight.sizes(), " (expected input [..., ", weight.size(1), "])");
  // With a bias, as PyTorch's linear: one addmm, the bias added in the product's epilogue, for a
  // matrix input or a contiguous one seen as one (rows of all its leading dims).
  if (bias.defined() && (x.dim() == 2 || (x.dim() > 2 && x.is_contiguous()))) {
    DimVector sizes(x.sizes());
    sizes.back() = weight.size(0);
    return addmm(bias, x.dim() == 2 ? x : x.view(geometry::fold_leading_dims(x.sizes(), 1)), weight.t()).view(sizes);
  }
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
  if (p == 1.0) return x * zeros({}, x.options());  // zeros in x's dtype, integers too (as torch's)
  TALLY_CHECK_TYPE_ERROR(x.is_floating_point(), "dropout: expected a floating point tensor, got ", dtype_name(x.dtype()));
  // The uniforms are float32 whatever x's dtype: bfloat16's 8 bits would drop 1.16% at p = 0.01
  // and everything at p = 0.999.
  Tensor keep = (rand(x.sizes(), x.options().dtype(kFloat32), gen) >= p).to(x.dtype());
  return x * (keep * (1.0 / (1.0 - p)));
}

namespace {

/// The scaled scores with attn_mask applied: PyTorch's math path (a bool mask fills −inf where it
/// is false; any other is added, the sum rounded to the scores' dtype as its in-place add is).
Tensor masked_scores(const Tensor& q, const Tensor& k, const Tensor& mask, double scale) {
  TALLY_CHECK_TYPE_ERROR(mask.dtype() == kBool || mask.dtype() == kFloat32 || mask.dtype() == q.dtype(),
                         "scaled_dot_product_attention: Expected attn_mask dtype to be bool or float or to match query dtype, but got ",
                         "attn_mask.dtype: ", dtype_name(mask.dtype()), " and query.dtype: ", dtype_name(q.dtype()), " instead.");
  const Tensor scores = matmul(q, k.transpose(-2, -1)) * scale;
  bool fits = mask.dim() <= scores.dim();
  for (int64_t i = 1; fits && i <= mask.dim(); ++i) fits = mask.size(-i) == 1 || mask.size(-i) == scores.size(-i);
  TALLY_CHECK(fits,
              "scaled_dot_product_attention: attn_mask of shape ", mask.sizes(), " does not broadcast to the scores' shape ",
              scores.sizes(), " (query ", q.sizes(), ", key ", k.sizes(), ")");
  if (mask.dtype() == kBool) return scores.masked_fill(mask == false, -std::numeric_limits<double>::infinity());
  return (scores + mask).to(scores.dtype());
}

}  // namespace

Tensor scaled_dot_product_attention(const Tensor& q_, const Tensor& k_, const Tensor& v_, const std::optional<Tensor>& attn_mask,
                                    double dropout_p, bool is_causal, std::optional<double> scale, Generator* gen) {
  TALLY_CHECK(dropout_p >= 0.0 && dropout_p <= 1.0, "scaled_dot_product_attention: dropout_p has to be between 0 and 1, but got ", dropout_p);
  const bool masked = attn_mask.has_value() && attn_mask->defined();
  TALLY_CHECK(!(masked && is_causal), "scaled_dot_product_attention: Explicit attn_mask should not be set when is_causal=True (got attn_mask of ",
              "shape ", attn_mask->sizes(), ")");
  Tensor q = q_, k = k_, v = v_;
  // Cast before the copies below, so that they are made once, in the dtype the op runs in.
  const ops::AutocastRegion autocast("scaled_dot_product_attention", {&q, &k, &v});
  // The batch dims broadcast, as matmul's do; the op itself takes them equal (and its checks
  // refuse inputs of other ranks).
  const bool batched = q.dim() >= 2 && k.dim() == q.dim() && v.dim() == q.dim();
  DimVector batch;
  if (batched) {
    batch = geometry::broadcast_shapes(q.sizes().slice(0, q.dim() - 2), k.sizes().slice(0, k.dim() - 2));
    batch = geometry::broadcast_shapes(batch, v.sizes().slice(0, v.dim() - 2));
  }
  auto with_batch = [&](const Tensor& t) {
    if (!batched) return t;
    DimVector sizes = batch;
    sizes.push_back(t.size(-2));
    sizes.push_back(t.size(-1));
    return t.expand(sizes);
  };
  q = with_batch(q), k = with_batch(k), v = with_batch(v);
  // Expanded and strided inputs (heads cut from a projection) are read where they lie.
  if (!masked && dropout_p == 0.0) return tally::scaled_dot_product_attention(q, k, v, is_causal, scale);
  const double s = attention_scale(q, scale);
  check_attention(q, k, v, s);  // the fused op's checks, so that both paths refuse alike
  Tensor p;
  if (masked) {
    const Tensor scores = masked_scores(q, k, *attn_mask, s);
    // Rows with every key masked: zeros (PyTorch 2.5's _safe_softmax), where softmax gives NaN.
    // They are zeroed before softmax too, so that its backward (which reads its output) meets no
    // NaN there, and no gradient leaves them, whichever mask made them.
    const Tensor dead = (scores == -std::numeric_limits<double>::infinity()).all(-1, true);
    p = softmax(scores.masked_fill(dead, 0.0), -1).masked_fill(dead, 0.0);
  } else {
    p = attention_softmax(matmul(q, k.transpose(-2, -1)), s, is_causal);
  }
  return matmul(dropout(p, dropout_p, true, gen), v);
}

}  // namespace tally::nn::functional
