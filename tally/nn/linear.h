#pragma once
// Linear and Embedding, with libtorch's layouts and initialisation.

#include <memory>
#include <optional>

#include "tally/core/generator.h"
#include "tally/core/tensor_options.h"
#include "tally/nn/layer.h"

namespace tally::nn {

/// What computes a Linear's x·Wᵀ + b in place of functional::linear, installed by a layer above
/// nn: amp::convert_to_fp8 installs an FP8 product with its scaling state. nn knows only this.
struct LinearProduct {
  virtual ~LinearProduct() = default;
  virtual Tensor forward(const Tensor& x, const Tensor& weight, const Tensor& bias) = 0;
};

/// y = x·Wᵀ + b with W [out_features, in_features] and b [out_features]; W and b start
/// U(−1/√in, 1/√in) (PyTorch's kaiming_uniform_(a = √5) and its bias rule).
class Linear : public Layer {
 public:
  Linear(int64_t in_features, int64_t out_features, bool bias = true, TensorOptions options = {}, Generator* gen = nullptr);
  Tensor forward(const Tensor& x) override;
  Tensor weight;
  Tensor bias;  ///< undefined without bias
  /// Where set (amp::convert_to_fp8 sets an FP8 product), forward computes through it.
  std::shared_ptr<LinearProduct> product;
};

/// The bias adds one forward row through `model` makes: out_features of each Linear with a bias
/// (not one with a product of its own, such as FP8's, which adds its bias apart). The ledger counts them in addmm's FLOPs, with each
/// product's 2·in·out: tokens × this is what to take off addmm's rows to compare the products
/// alone with napkin math, which counts matmuls only.
int64_t linear_bias_adds_per_row(Module& model);

/// A table of num_embeddings rows of embedding_dim, N(0, 1) at the start; forward looks up
/// integer ids of any shape, giving [..., embedding_dim].
class Embedding : public Layer {
 public:
  Embedding(int64_t num_embeddings, int64_t embedding_dim, TensorOptions options = {}, Generator* gen = nullptr);
  Tensor forward(const Tensor& ids) override;
  /// As torch's padding_idx (negative counts from the end): the row is zeroed now and gets no
  /// gradient, so a padding token's embedding stays as it is set.
  Embedding& set_padding_idx(int64_t idx);
  Tensor weight;
  std::optional<int64_t> padding_idx;  ///< wrapped to [0, num_embeddings); set through set_padding_idx
};

}  // namespace tally::nn
