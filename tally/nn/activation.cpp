#include "tally/nn/activation.h"

#include "tally/nn/functional.h"
#include "tally/ops/elementwise.h"

namespace tally::nn {

GELU::GELU(std::string approximate_) : Layer("GELU"), approximate(std::move(approximate_)) {
  TALLY_CHECK(approximate == "none" || approximate == "tanh", "GELU: approximate must be 'none' or 'tanh', got '", approximate, "'");
}

Tensor GELU::forward(const Tensor& x) {
  auto s = scope();
  return gelu(x, approximate);
}

Tensor SiLU::forward(const Tensor& x) {
  auto s = scope();
  return silu(x);
}

Tensor ReLU::forward(const Tensor& x) {
  auto s = scope();
  return relu(x);
}

Tensor Tanh::forward(const Tensor& x) {
  auto s = scope();
  return tanh(x);
}

Tensor Sigmoid::forward(const Tensor& x) {
  auto s = scope();
  return sigmoid(x);
}

Dropout::Dropout(double p_, Generator* gen_) : Layer("Dropout"), p(p_), gen(gen_) {
  TALLY_CHECK(p >= 0.0 && p <= 1.0, "dropout probability has to be between 0 and 1, but got ", p);
}

Tensor Dropout::forward(const Tensor& x) {
  auto s = scope();
  return functional::dropout(x, p, is_training(), gen);
}

}  // namespace tally::nn
