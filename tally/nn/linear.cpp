#include "tally/nn/linear.h"

#include <cmath>

#include "tally/core/autograd_meta.h"
#include "tally/nn/functional.h"
#include "tally/nn/init.h"
#include "tally/ops/creation.h"
#include "tally/ops/elementwise.h"
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
  if (product) return product->forward(x, weight, bias);
  return functional::linear(x, weight, bias);
}

int64_t linear_bias_adds_per_row(Module& model) {
  int64_t adds = 0;
  for (const auto& [path, m] : model.named_modules()) {
    if (const auto* linear = dynamic_cast<const Linear*>(m); linear && linear->bias.defined() && !linear->product) adds += linear->bias.numel();
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
  Tensor out = embedding(weight, ids);
  if (!padding_idx || !GradMode::is_enabled() || !weight.requires_grad()) return out;
  // Only the lookups of the padding id read its row: with their gradients held back (the same
  // values, detached there), the row gets none, as torch's embedding_backward skips it. One
  // select over the output, made only when a padding row is set.
  return where(ids.eq(*padding_idx).unsqueeze(-1), out.detach(), out);
}

Embedding& Embedding::set_padding_idx(int64_t idx) {
  const int64_t n = weight.size(0);
  TALLY_CHECK(idx >= -n && idx < n, "Embedding: padding_idx must be within num_embeddings: got ", idx, " for ", n, " embeddings");
  padding_idx = idx < 0 ? idx + n : idx;
  NoGradGuard no_grad;
  weight.select(0, *padding_idx).fill_(0);
  return *this;
}

}  // namespace tally::nn
