#include "tally/nn/functional.h"

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
  if (p == 1.0) return x * zeros({}, x.options());  // zeros in x's dtype (a number would promote an integer x)
  Tensor keep = (rand(x.sizes(), x.options(), gen) >= p).to(x.dtype());
  return x * (keep * (1.0 / (1.0 - p)));
}

Tensor scaled_dot_product_attention(const Tensor& q_, const Tensor& k_, const Tensor& v_, bool is_causal) {
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
  // Expanded and strided inputs (heads cut from a projection) are read where they lie.
  return tally::scaled_dot_product_attention(with_batch(q), with_batch(k), with_batch(v), is_causal);
}

}  // namespace tally::nn::functional
