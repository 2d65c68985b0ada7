#include "tally/nn/functional.h"

#include <cmath>

#include "tally/dtype/finfo.h"
#include "tally/ops/apply.h"
#include "tally/ops/creation.h"
#include "tally/ops/elementwise.h"
#include "tally/ops/matmul.h"
#include "tally/ops/random.h"
#include "tally/ops/reduce.h"
#include "tally/ops/softmax.h"

namespace tally::nn::functional {

namespace {
/// The last `n` dims of x, checked.
DimVector last_dims(const Tensor& x, int64_t n, const char* op) {
  TALLY_CHECK(n >= 1 && n <= x.dim(), op, ": cannot normalise over the last ", n, " dims of a tensor of shape ", x.sizes());
  DimVector dims;
  for (int64_t d = x.dim() - n; d < x.dim(); ++d) dims.push_back(d);
  return dims;
}
void check_affine(const Tensor& x, const Tensor& param, int64_t n, const char* op, const char* what) {
  if (!param.defined()) return;
  TALLY_CHECK(param.dim() == n && param.sizes() == IntArrayRef(x.sizes().data() + (x.dim() - n), static_cast<size_t>(n)), op, ": ", what, " of shape ", param.sizes(),
              " does not match the normalized shape of input ", x.sizes());
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

Tensor layer_norm(const Tensor& x_, int64_t normalized_dims, const Tensor& weight_, const Tensor& bias_, double eps) {
  Tensor x = x_, weight = weight_, bias = bias_;
  const ops::AutocastRegion autocast("layer_norm", {&x, &weight, &bias});
  const DimVector dims = last_dims(x, normalized_dims, "layer_norm");
  check_affine(x, weight, normalized_dims, "layer_norm", "weight");
  check_affine(x, bias, normalized_dims, "layer_norm", "bias");
  Tensor centered = x - x.mean(dims, true);
  Tensor y = centered * rsqrt(square(centered).mean(dims, true) + eps);
  if (weight.defined()) y = y * weight;
  return bias.defined() ? y + bias : y;
}

Tensor rms_norm(const Tensor& x_, int64_t normalized_dims, const Tensor& weight_, std::optional<double> eps) {
  Tensor x = x_, weight = weight_;
  const ops::AutocastRegion autocast("rms_norm", {&x, &weight});
  const DimVector dims = last_dims(x, normalized_dims, "rms_norm");
  check_affine(x, weight, normalized_dims, "rms_norm", "weight");
  Tensor y = x * rsqrt(square(x).mean(dims, true) + eps.value_or(finfo(x.dtype()).eps));
  return weight.defined() ? y * weight : y;
}

Tensor dropout(const Tensor& x, double p, bool training, Generator* gen) {
  TALLY_CHECK(p >= 0.0 && p <= 1.0, "dropout probability has to be between 0 and 1, but got ", p);
  if (!training || p == 0.0) return x;
  if (p == 1.0) return x * 0.0;
  Tensor keep = (rand(x.sizes(), TensorOptions(x.dtype()).device(x.device()), gen) >= p).to(x.dtype());
  return x * (keep * (1.0 / (1.0 - p)));
}

Tensor scaled_dot_product_attention(const Tensor& q, const Tensor& k, const Tensor& v, bool is_causal) {
  TALLY_CHECK(q.dim() >= 2 && k.dim() == q.dim() && v.dim() == q.dim() && q.size(-1) == k.size(-1) && k.size(-2) == v.size(-2),
              "scaled_dot_product_attention: q ", q.sizes(), ", k ", k.sizes(), " and v ", v.sizes(),
              " must be [..., T, d] with matching d (q, k) and key length (k, v)");
  Tensor scores = matmul(q, k.transpose(-2, -1)) * (1.0 / std::sqrt(static_cast<double>(q.size(-1))));
  if (is_causal) {
    const Tensor mask = ones({q.size(-2), k.size(-2)}, TensorOptions(kBool).device(q.device())).triu(1);
    scores = scores.masked_fill(mask, -INFINITY);
  }
  return matmul(softmax(scores, -1), v);
}

}  // namespace tally::nn::functional
