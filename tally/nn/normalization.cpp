#include "tally/nn/normalization.h"

#include "tally/nn/functional.h"
#include "tally/ops/creation.h"

namespace tally::nn {

LayerNorm::LayerNorm(int64_t normalized_shape, double eps_, bool elementwise_affine, bool with_bias, TensorOptions options)
    : Layer("LayerNorm"), eps(eps_) {
  TALLY_CHECK(normalized_shape > 0, "LayerNorm: normalized_shape must be positive, got ", normalized_shape);
  if (elementwise_affine) {
    weight = register_parameter("weight", ones({normalized_shape}, options));
    if (with_bias) bias = register_parameter("bias", zeros({normalized_shape}, options));
  }
}

Tensor LayerNorm::forward(const Tensor& x) {
  auto s = scope();
  return functional::layer_norm(x, 1, weight, bias, eps);
}

RMSNorm::RMSNorm(int64_t normalized_shape, std::optional<double> eps_, bool elementwise_affine, TensorOptions options)
    : Layer("RMSNorm"), eps(eps_) {
  TALLY_CHECK(normalized_shape > 0, "RMSNorm: normalized_shape must be positive, got ", normalized_shape);
  if (elementwise_affine) weight = register_parameter("weight", ones({normalized_shape}, options));
}

Tensor RMSNorm::forward(const Tensor& x) {
  auto s = scope();
  return functional::rms_norm(x, 1, weight, eps);
}

}  // namespace tally::nn
