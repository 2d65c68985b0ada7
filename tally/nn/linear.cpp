#include "tally/nn/linear.h"

#include <cmath>

#include "tally/amp/fp8_linear.h"
#include "tally/nn/functional.h"
#include "tally/nn/init.h"
#include "tally/ops/creation.h"
#include "tally/ops/join.h"

namespace tally::nn {

Linear::Linear(int64_t in_features, int64_t out_features, bool with_bias, TensorOptions options, Generator* gen)
    : Layer("Linear") {
  TALLY_CHECK(in_features >= 0 && out_features >= 0, "Linear: in_features (", in_features, ") and out_features (", out_features,
              ") must be non-negative");
  weight = register_parameter("weight", empty({out_features, in_features}, options));
  init::kaiming_uniform_(weight, std::sqrt(5.0), "fan_in", "leaky_relu", gen);
  if (with_bias) {
    bias = register_parameter("bias", empty({out_features}, options));
    const double bound = in_features > 0 ? 1.0 / std::sqrt(static_cast<double>(in_features)) : 0.0;  // torch's, for no inputs
    init::uniform_(bias, -bound, bound, gen);
  }
}

Tensor Linear::forward(const Tensor& x) {
  auto s = scope();
  if (fp8) return amp::fp8_linear(x, weight, bias, *fp8);
  return functional::linear(x, weight, bias);
}

int64_t linear_bias_adds_per_row(Module& model) {
  int64_t adds = 0;
  for (const auto& [path, m] : model.named_modules()) {
    if (const auto* linear = dynamic_cast<const Linear*>(m); linear && linear->bias.defined() && !linear->fp8) adds += linear->bias.numel();
  }
  return adds;
}

Embedding::Embedding(int64_t num_embeddings, int64_t embedding_dim, TensorOptions options, Generator* gen) : Layer("Embedding") {
  TALLY_CHECK(num_embeddings >= 0 && embedding_dim >= 0, "Embedding: num_embeddings (", num_embeddings, ") and embedding_dim (",
              embedding_dim, ") must be non-negative");
  weight = register_parameter("weight", empty({num_embeddings, embedding_dim}, options));
  init::normal_(weight, 0.0, 1.0, gen);
}

Tensor Embedding::forward(const Tensor& ids) {
  auto s = scope();
  return embedding(weight, ids);
}

}  // namespace tally::nn
