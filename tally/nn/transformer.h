#pragma once
// A GPT-style decoder-only language model: token embedding, (learned or rotary) positions,
// pre-norm blocks of causal multi-head self-attention and an MLP, a final norm, and an output
// projection that is its own weight or the token embedding's (tied).

#include <memory>
#include <string>

#include "tally/accounting/estimate.h"
#include "tally/core/generator.h"
#include "tally/core/tensor_options.h"
#include "tally/nn/activation.h"
#include "tally/nn/container.h"
#include "tally/nn/linear.h"
#include "tally/nn/normalization.h"

namespace tally::nn {

enum class PositionEncoding : uint8_t { Learned, Rotary };
enum class MlpKind : uint8_t { Gelu, SwiGLU };
enum class NormKind : uint8_t { LayerNorm, RMSNorm };

struct TransformerConfig {
  int64_t vocab_size = 256;
  int64_t context_length = 256;
  int64_t d_model = 256;
  int64_t num_layers = 4;
  int64_t num_heads = 4;
  int64_t d_ff = 0;  ///< the MLP's hidden width; 0 means 4·d_model
  PositionEncoding positions = PositionEncoding::Learned;
  MlpKind mlp = MlpKind::Gelu;
  NormKind norm = NormKind::LayerNorm;
  bool tied_embeddings = true;
  bool bias = true;        ///< biases in the linear layers and LayerNorms
  double dropout = 0.0;    ///< on the embeddings, the attention output and the MLP output
  double rope_theta = 10000.0;
  int64_t hidden() const { return d_ff > 0 ? d_ff : 4 * d_model; }
  /// Raises ValueError naming the first inconsistent field.
  void validate() const;
};

/// The GPT-2 architecture that `tally estimate transformer`'s formula describes (learned positions,
/// LayerNorm, a 4·d GELU MLP, biases, tied or untied head), so the formula and the model agree.
TransformerConfig gpt2_config(const accounting::TransformerConfig& napkin);

/// The feed-forward block: fc → GELU → proj, or SwiGLU: w2(silu(w1·x) ⊙ w3·x).
class MLP : public Layer {
 public:
  MLP(int64_t d_model, int64_t hidden, MlpKind kind, bool bias = true, TensorOptions options = {}, Generator* gen = nullptr);
  Tensor forward(const Tensor& x) override;
  MlpKind kind;
  std::shared_ptr<Linear> fc, proj;  ///< GELU: d → hidden → d
  std::shared_ptr<Linear> w1, w2, w3;  ///< SwiGLU
};

/// Multi-head self-attention over [b, T, d] with a causal mask; with rotary positions, q and k
/// are rotated by position (GPT-NeoX's half split) before the scores.
class CausalSelfAttention : public Layer {
 public:
  CausalSelfAttention(int64_t d_model, int64_t num_heads, int64_t context_length, bool bias = true, bool rotary = false,
                      double rope_theta = 10000.0, double dropout = 0.0, TensorOptions options = {}, Generator* gen = nullptr);
  Tensor forward(const Tensor& x) override;
  int64_t num_heads;
  std::shared_ptr<Linear> qkv, proj;
  std::shared_ptr<Dropout> drop;

 private:
  Tensor rotate(const Tensor& x) const;  // [b, h, T, dh]
  Tensor cos_, sin_;                     // [context_length, dh], non-persistent buffers (rotary only)
};

/// x + attn(norm1(x)), then x + mlp(norm2(x)).
class TransformerBlock : public Layer {
 public:
  TransformerBlock(const TransformerConfig& config, TensorOptions options = {}, Generator* gen = nullptr);
  Tensor forward(const Tensor& x) override;
  std::shared_ptr<Layer> norm1, norm2;
  std::shared_ptr<CausalSelfAttention> attn;
  std::shared_ptr<MLP> mlp;
  std::shared_ptr<Dropout> drop;
};

/// Token ids [b, T] (T ≤ context_length) → logits [b, T, vocab]. Weights start N(0, 0.02) (GPT-2),
/// the residual projections N(0, 0.02/√(2·layers)), biases 0, norm gains 1.
class TransformerLM : public Layer {
 public:
  explicit TransformerLM(const TransformerConfig& config, TensorOptions options = {}, Generator* gen = nullptr);
  Tensor forward(const Tensor& ids) override;
  /// Mean cross-entropy of forward(ids) against targets [b, T].
  Tensor loss(const Tensor& ids, const Tensor& targets);
  const TransformerConfig& config() const { return config_; }

  std::shared_ptr<Embedding> token_embedding, position_embedding;  ///< position_embedding only when learned
  std::shared_ptr<ModuleList> blocks;
  std::shared_ptr<Layer> norm_f;
  std::shared_ptr<Linear> lm_head;  ///< null when tied
  std::shared_ptr<Dropout> drop;

 private:
  TransformerConfig config_;
};

}  // namespace tally::nn
