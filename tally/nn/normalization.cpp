#include "tally/nn/normalization.h"

#include "tally/ops/creation.h"
#include "tally/ops/normalization.h"

namespace tally::nn {

LayerNorm::LayerNorm(int64_t normalized_shape, double eps_, bool elementwise_affine, bool with_bias, TensorOptions options)
    : Layer("LayerNorm"), normalized_shape(normalized_shape), eps(eps_) {
  TALLY_CHECK(normalized_shape > 0, "LayerNorm: normalized_shape must be positive, got ", normalized_shape);
  if (elementwise_affine) {
    weight = register_parameter("weight", ones({normalized_shape}, options));
    if (with_bias) bias = register_parameter("bias", zeros({normalized_shape}, options));
  }
}

Tensor LayerNorm::forward(const Tensor& x) {
  auto s = scope();
  // The op checks the input's last dim against the layer's width, weights or none.
  return tally::layer_norm(x, {normalized_shape}, weight, bias, eps);
}

RMSNorm::RMSNorm(int64_t normalized_shape, std::optional<double> eps_, bool elementwise_affine, TensorOptions options)
    : Layer("RMSNorm"), normalized_shape(normalized_shape), eps(eps_) {
  TALLY_CHECK(normalized_shape > 0, "RMSNorm: normalized_shape must be positive, got ", normalized_shape);
  if (elementwise_affine) weight = register_parameter("weight", ones({normalized_shape}, options));
}

Tensor RMSNorm::forward(const Tensor& x) {
  auto s = scope();
  return tally::rms_norm(x, {normalized_shape}, weight, eps);
}

}  // namespace tally::nn
