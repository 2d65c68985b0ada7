#pragma once
// A GPT-style decoder-only language model: token embedding, (learned or rotary) positions,
// pre-norm blocks of causal multi-head self-attention and an MLP, a final norm, and an output
// projection that is its own weight or the token embedding's (tied).

#include <functional>
#include <memory>
#include <string>

#include "tally/accounting/estimate.h"
#include "tally/core/generator.h"
#include "tally/core/tensor_options.h"
#include "tally/nn/activation.h"
#include "tally/nn/container.h"
#include "tally/nn/kv_cache.h"
#include "tally/nn/linear.h"
#include "tally/nn/normalization.h"
#include "tally/nn/sampling.h"

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
  /// The same for positions [cache.length(), cache.length() + T): their keys and values are
  /// written into `layer`'s part of the cache, and their queries attend to every position held.
  Tensor forward(const Tensor& x, KVCache& cache, int64_t layer);
  int64_t num_heads;
  std::shared_ptr<Linear> qkv, proj;
  std::shared_ptr<Dropout> drop;

 private:
  Tensor rotate(const Tensor& x, int64_t start) const;  // [b, h, T, dh] at positions start, start + 1, …
  Tensor cos_, sin_;                     // [context_length, dh], non-persistent buffers (rotary only)
};

/// x + attn(norm1(x)), then x + mlp(norm2(x)).
class TransformerBlock : public Layer {
 public:
  TransformerBlock(const TransformerConfig& config, TensorOptions options = {}, Generator* gen = nullptr);
  Tensor forward(const Tensor& x) override;
  /// With a KV cache (CausalSelfAttention::forward).
  Tensor forward(const Tensor& x, KVCache& cache, int64_t layer);
  std::shared_ptr<Layer> norm1, norm2;
  std::shared_ptr<CausalSelfAttention> attn;
  std::shared_ptr<MLP> mlp;
  std::shared_ptr<Dropout> drop;
};

struct GenerationOptions {
  int64_t max_new_tokens = 100;
  SamplingOptions sampling;
  /// false: each token runs a forward over the whole window instead of one position over the
  /// cache (the reference the cache is checked against, and what decoding without one costs).
  bool use_cache = true;
  /// Called with i and token i [b, 1] as each new token is chosen (to stream the text; to time the
  /// prefill, which ends as token 0 is chosen, apart from the decoding after it).
  std::function<void(int64_t, const Tensor&)> on_token;
  /// Called once with the prefill's logits [b, T, vocab]: every position of the prompt (its last
  /// context_length when longer), to score a text or compare the model with another framework.
  std::function<void(const Tensor&)> on_prompt_logits;
};

/// Token ids [b, T] (T ≤ context_length) → logits [b, T, vocab]. Weights start N(0, 0.02) (GPT-2),
/// the residual projections N(0, 0.02/√(2·layers)), biases 0, norm gains 1.
class TransformerLM : public Layer {
 public:
  explicit TransformerLM(const TransformerConfig& config, TensorOptions options = {}, Generator* gen = nullptr);
  Tensor forward(const Tensor& ids) override;
  /// Incremental decoding: the logits of positions [cache.length(), cache.length() + T) of ids
  /// [b, T], which follow the positions the cache holds; their keys and values join the cache.
  /// Equal, within rounding, to the last T positions of forward() over the whole sequence.
  Tensor forward(const Tensor& ids, KVCache& cache);
  /// An empty cache for `batch` sequences of up to `capacity` positions (at most context_length),
  /// in the dtype and on the device of the model's parameters.
  KVCache make_kv_cache(int64_t batch, int64_t capacity) const;
  /// The prompt ids [b, T] followed by max_new_tokens tokens, each chosen from the logits of the
  /// one before (sample_next_token), without gradients and with dropout off: [b, T + new]. The
  /// prompt is run once (the prefill), then each token over the KV cache. Past the context length
  /// the window is cut to its last context_length tokens, as nanoGPT's generate does, and run
  /// again. The same generator state gives the same tokens.
  Tensor generate(const Tensor& prompt, const GenerationOptions& options, Generator* gen = nullptr);
  /// Mean cross-entropy of forward(ids) against targets [b, T].
  Tensor loss(const Tensor& ids, const Tensor& targets);
  const TransformerConfig& config() const { return config_; }

  std::shared_ptr<Embedding> token_embedding, position_embedding;  ///< position_embedding only when learned
  std::shared_ptr<ModuleList> blocks;
  std::shared_ptr<Layer> norm_f;
  std::shared_ptr<Linear> lm_head;  ///< null when tied
  std::shared_ptr<Dropout> drop;

 private:
  Tensor embed(const Tensor& ids, int64_t start);  // the tokens' and positions' embeddings, positions from `start`
  Tensor head(const Tensor& x);                    // the final norm and the output projection
  TransformerConfig config_;
};

}  // namespace tally::nn
