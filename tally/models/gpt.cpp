#include "tally/models/gpt.h"

#include <cmath>

#include "tally/accounting/memory_tracker.h"
#include "tally/ops/creation.h"
#include "tally/ops/elementwise.h"
#include "tally/ops/join.h"
#include "tally/ops/matmul.h"
#include "tally/ops/random.h"
#include "tally/ops/reduce.h"
#include "tally/ops/softmax.h"

namespace tally::models {

namespace {

Tensor parameter(Tensor t) {
  accounting::set_memory_category(t, MemoryCategory::Parameters);
  return t.requires_grad_();
}

/// LayerNorm over the last dim, composed of tally ops.
Tensor layer_norm(const Tensor& x, const Tensor& gain, const Tensor& bias) {
  Tensor mu = x.mean({-1}, true);
  Tensor centered = x - mu;
  Tensor var = square(centered).mean({-1}, true);
  return centered * rsqrt(var + 1e-5) * gain + bias;
}

}  // namespace

Gpt::Gpt(const accounting::TransformerConfig& config, TensorOptions options, Generator* gen) : config_(config) {
  const int64_t d = config.d_model, V = config.vocab, T = config.seq_len;
  TALLY_CHECK(config.layers > 0 && d > 0 && V > 0 && T > 0 && config.heads > 0,
              "Gpt: layers, d_model, heads, vocab and seq_len must be positive");
  TALLY_CHECK(d % config.heads == 0, "Gpt: d_model ", d, " is not divisible by heads ", config.heads);
  auto weight = [&](std::vector<int64_t> sizes) { return parameter(randn(sizes, options, gen) * 0.02); };
  auto bias = [&](int64_t n) { return parameter(zeros({n}, options)); };
  auto gain = [&](int64_t n) { return parameter(ones({n}, options)); };
  wte_ = weight({V, d});
  wpe_ = weight({T, d});
  for (int64_t l = 0; l < config.layers; ++l) {
    blocks_.push_back({gain(d), bias(d), weight({d, 3 * d}), bias(3 * d), weight({d, d}), bias(d), gain(d), bias(d),
                       weight({d, 4 * d}), bias(4 * d), weight({4 * d, d}), bias(d)});
  }
  lnf_gain_ = gain(d);
  lnf_bias_ = bias(d);
  if (!config.tied_embeddings) lm_head_ = weight({d, V});
  causal_mask_ = ones({T, T}, TensorOptions(kBool).device(options.device_or())).triu(1);  // true above the diagonal: masked
}

Tensor Gpt::forward(const Tensor& tokens) const {
  TALLY_CHECK(tokens.dim() == 2 && tokens.size(1) == config_.seq_len, "Gpt: expected tokens of shape [b, ", config_.seq_len,
              "], got ", tokens.sizes());
  const int64_t b = tokens.size(0), T = config_.seq_len, d = config_.d_model, a = config_.heads, dh = d / a;
  Tensor x = embedding(wte_, tokens) + wpe_;  // [b, T, d]
  for (const GptBlock& blk : blocks_) {
    Tensor h = layer_norm(x, blk.ln1_gain, blk.ln1_bias);
    Tensor qkv = matmul(h, blk.w_qkv) + blk.b_qkv;  // [b, T, 3d]
    auto heads = [&](int64_t i) { return qkv.narrow(-1, i * d, d).reshape({b, T, a, dh}).permute({0, 2, 1, 3}); };
    Tensor q = heads(0), k = heads(1), v = heads(2);  // [b, a, T, dh]
    Tensor att = matmul(q, k.transpose(-1, -2)) * (1.0 / std::sqrt(static_cast<double>(dh)));  // [b, a, T, T]
    att = softmax(att.masked_fill(causal_mask_, -INFINITY), -1);
    Tensor y = matmul(att, v).permute({0, 2, 1, 3}).reshape({b, T, d});
    x = x + (matmul(y, blk.w_proj) + blk.b_proj);
    Tensor m = gelu(matmul(layer_norm(x, blk.ln2_gain, blk.ln2_bias), blk.w_fc) + blk.b_fc);  // [b, T, 4d]
    x = x + (matmul(m, blk.w_fc2) + blk.b_fc2);
  }
  // The output projection: the token embedding itself when tied (GPT-2), else its own weight.
  return matmul(layer_norm(x, lnf_gain_, lnf_bias_), config_.tied_embeddings ? wte_.t() : lm_head_);  // [b, T, V]
}

Tensor Gpt::loss(const Tensor& tokens, const Tensor& targets) const {
  Tensor logits = forward(tokens);
  TALLY_CHECK(targets.sizes() == tokens.sizes(), "Gpt: targets of shape ", targets.sizes(), " do not match tokens ", tokens.sizes());
  const int64_t V = config_.vocab;
  Tensor onehot = (targets.unsqueeze(-1) == arange(V, TensorOptions(kInt64).device(targets.device()))).to(logits.dtype());
  return -(log_softmax(logits, -1) * onehot).sum() / static_cast<double>(targets.numel());
}

std::vector<Tensor> Gpt::parameters() const {
  std::vector<Tensor> ps = {wte_, wpe_};
  for (const GptBlock& blk : blocks_) {
    for (const Tensor* t : {&blk.ln1_gain, &blk.ln1_bias, &blk.w_qkv, &blk.b_qkv, &blk.w_proj, &blk.b_proj, &blk.ln2_gain,
                            &blk.ln2_bias, &blk.w_fc, &blk.b_fc, &blk.w_fc2, &blk.b_fc2})
      ps.push_back(*t);
  }
  ps.push_back(lnf_gain_);
  ps.push_back(lnf_bias_);
  if (lm_head_.defined()) ps.push_back(lm_head_);
  return ps;
}

int64_t Gpt::num_parameters() const {
  int64_t n = 0;
  for (const Tensor& p : parameters()) n += p.numel();
  return n;
}

}  // namespace tally::models
