#pragma once
// Activation layers and Dropout.

#include <string>

#include "tally/core/generator.h"
#include "tally/nn/layer.h"

namespace tally::nn {

/// GELU, exact ("none") or with the tanh approximation ("tanh").
class GELU : public Layer {
 public:
  explicit GELU(std::string approximate = "none");
  Tensor forward(const Tensor& x) override;
  std::string approximate;
};

/// x·sigmoid(x).
class SiLU : public Layer {
 public:
  SiLU() : Layer("SiLU") {}
  Tensor forward(const Tensor& x) override;
};

/// max(x, 0).
class ReLU : public Layer {
 public:
  ReLU() : Layer("ReLU") {}
  Tensor forward(const Tensor& x) override;
};

/// tanh x.
class Tanh : public Layer {
 public:
  Tanh() : Layer("Tanh") {}
  Tensor forward(const Tensor& x) override;
};

/// 1 / (1 + e⁻ˣ).
class Sigmoid : public Layer {
 public:
  Sigmoid() : Layer("Sigmoid") {}
  Tensor forward(const Tensor& x) override;
};

/// Zeroes each element with probability p in training (scaling the rest by 1/(1 − p)); the
/// identity in eval mode. Draws from `gen` (the default generator when null).
class Dropout : public Layer {
 public:
  explicit Dropout(double p = 0.5, Generator* gen = nullptr);
  Tensor forward(const Tensor& x) override;
  double p;
  Generator* gen;
};

}  // namespace tally::nn
