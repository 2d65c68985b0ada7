#pragma once
// A GPT-2-style decoder-only transformer written with tally ops: pre-LayerNorm blocks, learned
// position embeddings, a 4·d MLP with GELU, attention over the full masked T×T scores and an
// output projection tied to the token embedding (or its own weight, untied). It is the model `tally estimate transformer`
// runs on the meta device (Note [Meta device] in ops/apply.h) to measure what its formula
// predicts, so both describe exactly one architecture (accounting::TransformerConfig).

#include <vector>

#include "tally/accounting/estimate.h"
#include "tally/core/generator.h"
#include "tally/core/tensor.h"
#include "tally/core/tensor_options.h"

namespace tally::models {

/// One block's parameters, weights stored (in, out) so a layer is x·W + b.
struct GptBlock {
  Tensor ln1_gain, ln1_bias, w_qkv, b_qkv, w_proj, b_proj, ln2_gain, ln2_bias, w_fc, b_fc, w_fc2, b_fc2;
};

class Gpt {
 public:
  /// A model of `config` (its batch is ignored here) with parameters made by `options` (dtype,
  /// device; on the meta device, shapes only): weights N(0, 0.02) from `gen`, biases 0,
  /// LayerNorm gains 1. Every parameter requires grad and is accounted as a parameter.
  Gpt(const accounting::TransformerConfig& config, TensorOptions options = {}, Generator* gen = nullptr);

  /// Logits [b, T, V] for tokens [b, T] (int64, on the model's device).
  Tensor forward(const Tensor& tokens) const;
  /// Mean cross-entropy of forward(tokens) against targets [b, T].
  Tensor loss(const Tensor& tokens, const Tensor& targets) const;

  /// Every parameter, in a fixed order.
  std::vector<Tensor> parameters() const;
  /// Elements of all parameters.
  int64_t num_parameters() const;
  const accounting::TransformerConfig& config() const { return config_; }

 private:
  accounting::TransformerConfig config_;
  Tensor wte_, wpe_, lnf_gain_, lnf_bias_, lm_head_, causal_mask_;
  std::vector<GptBlock> blocks_;
};

}  // namespace tally::models
