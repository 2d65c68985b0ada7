#pragma once
// LayerNorm and RMSNorm over the last dimension (torch.nn.LayerNorm / RMSNorm).

#include <optional>

#include "tally/core/tensor_options.h"
#include "tally/nn/layer.h"

namespace tally::nn {

/// (x − mean) / √(var + eps) · weight + bias over the last dim of size `normalized_shape`;
/// weight starts at 1 and bias at 0.
class LayerNorm : public Layer {
 public:
  explicit LayerNorm(int64_t normalized_shape, double eps = 1e-5, bool elementwise_affine = true, bool bias = true,
                     TensorOptions options = {});
  Tensor forward(const Tensor& x) override;
  Tensor weight, bias;
  int64_t normalized_shape;
  double eps;
};

/// x / √(mean(x²) + eps) · weight over the last dim; eps defaults to the input dtype's epsilon.
class RMSNorm : public Layer {
 public:
  explicit RMSNorm(int64_t normalized_shape, std::optional<double> eps = std::nullopt, bool elementwise_affine = true,
                   TensorOptions options = {});
  Tensor forward(const Tensor& x) override;
  Tensor weight;
  int64_t normalized_shape;
  std::optional<double> eps;
};

}  // namespace tally::nn
