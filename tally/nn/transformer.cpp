#include "tally/nn/transformer.h"

#include <cmath>

#include "tally/nn/functional.h"
#include "tally/nn/init.h"
#include "tally/ops/attention.h"
#include "tally/ops/creation.h"
#include "tally/ops/elementwise.h"
#include "tally/ops/join.h"

namespace tally::nn {

void TransformerConfig::validate() const {
  TALLY_CHECK(vocab_size > 0, "TransformerConfig: vocab_size must be positive, got ", vocab_size);
  TALLY_CHECK(context_length > 0, "TransformerConfig: context_length must be positive, got ", context_length);
  TALLY_CHECK(d_model > 0, "TransformerConfig: d_model must be positive, got ", d_model);
  TALLY_CHECK(num_layers > 0, "TransformerConfig: num_layers must be positive, got ", num_layers);
  TALLY_CHECK(num_heads > 0 && d_model % num_heads == 0, "TransformerConfig: d_model ", d_model,
              " must be a positive multiple of num_heads ", num_heads);
  TALLY_CHECK(d_ff >= 0, "TransformerConfig: d_ff must be 0 (4·d_model) or positive, got ", d_ff);
  TALLY_CHECK(positions != PositionEncoding::Rotary || (d_model / num_heads) % 2 == 0,
              "TransformerConfig: rotary positions need an even head size, got d_model / num_heads = ", d_model / num_heads);
  TALLY_CHECK(dropout >= 0.0 && dropout < 1.0, "TransformerConfig: dropout must be in [0, 1), got ", dropout);
}

TransformerConfig gpt2_config(const accounting::TransformerConfig& napkin) {
  TransformerConfig c;
  c.vocab_size = napkin.vocab;
  c.context_length = napkin.seq_len;
  c.d_model = napkin.d_model;
  c.num_layers = napkin.layers;
  c.num_heads = napkin.heads;
  c.tied_embeddings = napkin.tied_embeddings;
  return c;
}

namespace {
std::shared_ptr<Layer> make_norm(const TransformerConfig& c, TensorOptions options) {
  if (c.norm == NormKind::RMSNorm) return std::make_shared<RMSNorm>(c.d_model, std::nullopt, true, options);
  return std::make_shared<LayerNorm>(c.d_model, 1e-5, true, c.bias, options);
}
}  // namespace

MLP::MLP(int64_t d_model, int64_t hidden, MlpKind kind_, bool bias, TensorOptions options, Generator* gen) : Layer("MLP"), kind(kind_) {
  if (kind == MlpKind::Gelu) {
    fc = register_module("fc", std::make_shared<Linear>(d_model, hidden, bias, options, gen));
    proj = register_module("proj", std::make_shared<Linear>(hidden, d_model, bias, options, gen));
  } else {
    w1 = register_module("w1", std::make_shared<Linear>(d_model, hidden, bias, options, gen));
    w2 = register_module("w2", std::make_shared<Linear>(hidden, d_model, bias, options, gen));
    w3 = register_module("w3", std::make_shared<Linear>(d_model, hidden, bias, options, gen));
  }
}

Tensor MLP::forward(const Tensor& x) {
  auto s = scope();
  if (kind == MlpKind::Gelu) return (*proj)(gelu((*fc)(x)));
  return (*w2)(silu((*w1)(x)) * (*w3)(x));
}

CausalSelfAttention::CausalSelfAttention(int64_t d_model, int64_t num_heads_, int64_t context_length, bool bias, bool rotary,
                                         double rope_theta, double dropout, TensorOptions options, Generator* gen)
    : Layer("CausalSelfAttention"), num_heads(num_heads_) {
  TALLY_CHECK(num_heads > 0 && d_model % num_heads == 0, "CausalSelfAttention: d_model ", d_model,
              " must be a positive multiple of num_heads ", num_heads);
  qkv = register_module("qkv", std::make_shared<Linear>(d_model, 3 * d_model, bias, options, gen));
  proj = register_module("proj", std::make_shared<Linear>(d_model, d_model, bias, options, gen));
  drop = register_module("drop", std::make_shared<Dropout>(dropout, gen));
  if (rotary) {
    // angle(t, i) = t · θ^(−2i/dh) for the first half of the head; the second half repeats it.
    const int64_t dh = d_model / num_heads;
    Tensor c = empty({context_length, dh}, TensorOptions(kFloat64)), sn = empty({context_length, dh}, TensorOptions(kFloat64));
    double* pc = c.data_ptr<double>();
    double* ps = sn.data_ptr<double>();
    for (int64_t t = 0; t < context_length; ++t) {
      for (int64_t i = 0; i < dh / 2; ++i) {
        const double angle = static_cast<double>(t) * std::pow(rope_theta, -2.0 * static_cast<double>(i) / static_cast<double>(dh));
        pc[t * dh + i] = pc[t * dh + i + dh / 2] = std::cos(angle);
        ps[t * dh + i] = ps[t * dh + i + dh / 2] = std::sin(angle);
      }
    }
    cos_ = register_buffer("rope_cos", c.to(options.device_or(), options.dtype_or(get_default_dtype())), false);
    sin_ = register_buffer("rope_sin", sn.to(options.device_or(), options.dtype_or(get_default_dtype())), false);
  }
}

Tensor CausalSelfAttention::rotate(const Tensor& x, int64_t start) const {
  const int64_t T = x.size(-2), half = x.size(-1) / 2;
  Tensor rotated_half = cat({-x.narrow(-1, half, half), x.narrow(-1, 0, half)}, -1);
  return x * cos_.narrow(0, start, T) + rotated_half * sin_.narrow(0, start, T);
}

Tensor CausalSelfAttention::forward(const Tensor& x) {
  auto s = scope();
  TALLY_CHECK(x.dim() == 3, "CausalSelfAttention: expected input [b, T, d], got ", x.sizes());
  const int64_t b = x.size(0), T = x.size(1), d = x.size(2), dh = d / num_heads;
  Tensor packed = (*qkv)(x);  // [b, T, 3d]
  Tensor y;  // [b, T, d]
  if (cos_.defined()) {
    auto heads = [&](int64_t i) { return packed.narrow(-1, i * d, d).reshape({b, T, num_heads, dh}).permute({0, 2, 1, 3}); };
    y = functional::scaled_dot_product_attention(rotate(heads(0), 0), rotate(heads(1), 0), heads(2), std::nullopt, 0.0, /*is_causal=*/true)
            .permute({0, 2, 1, 3})
            .reshape({b, T, d});
  } else {
    // q, k and v stay where the projection put them, [b, T, 3, h, dh]: the op reads the heads in
    // place and writes [b, T, h, dh], the output projection's input as it is; its backward
    // writes the projection's gradient in one piece, in the projection's layout. No copies.
    y = scaled_dot_product_attention_packed(packed.view({b, T, 3, num_heads, dh}), /*is_causal=*/true).view({b, T, d});
  }
  return (*drop)((*proj)(y));
}

Tensor CausalSelfAttention::forward(const Tensor& x, KVCache& cache, int64_t layer) {
  auto s = scope();
  TALLY_CHECK(x.dim() == 3, "CausalSelfAttention: expected input [b, T, d], got ", x.sizes());
  const int64_t b = x.size(0), T = x.size(1), d = x.size(2), dh = d / num_heads, start = cache.length();
  Tensor packed = (*qkv)(x);  // [b, T, 3d]
  auto heads = [&](int64_t i) { return packed.narrow(-1, i * d, d).view({b, T, num_heads, dh}).permute({0, 2, 1, 3}); };
  Tensor q = heads(0), k = heads(1);
  if (cos_.defined()) q = rotate(q, start), k = rotate(k, start);
  auto [keys, values] = cache.append(layer, k, heads(2));  // [b, h, start + T, dh]
  // Query i (position start + i) sees keys 0 … start + i. With nothing cached that is is_causal's
  // square triangle; one new query sees every key; a block after cached positions needs the
  // triangle shifted right by `start`, as a mask.
  std::optional<Tensor> mask;
  if (start > 0 && T > 1) mask = ones({T, start + T}, TensorOptions(kBool).device(x.device())).tril(start);
  Tensor y = functional::scaled_dot_product_attention(q, keys, values, mask, 0.0, /*is_causal=*/start == 0 && T > 1);
  return (*drop)((*proj)(y.permute({0, 2, 1, 3}).reshape({b, T, d})));
}

TransformerBlock::TransformerBlock(const TransformerConfig& c, TensorOptions options, Generator* gen) : Layer("TransformerBlock") {
  norm1 = register_module("norm1", make_norm(c, options));
  attn = register_module("attn", std::make_shared<CausalSelfAttention>(c.d_model, c.num_heads, c.context_length, c.bias,
                                                                         c.positions == PositionEncoding::Rotary, c.rope_theta,
                                                                         c.dropout, options, gen));
  norm2 = register_module("norm2", make_norm(c, options));
  mlp = register_module("mlp", std::make_shared<MLP>(c.d_model, c.hidden(), c.mlp, c.bias, options, gen));
  drop = register_module("drop", std::make_shared<Dropout>(c.dropout, gen));
}

Tensor TransformerBlock::forward(const Tensor& x) {
  auto s = scope();
  Tensor h = x + (*attn)((*norm1)(x));
  return h + (*drop)((*mlp)((*norm2)(h)));
}

Tensor TransformerBlock::forward(const Tensor& x, KVCache& cache, int64_t layer) {
  auto s = scope();
  Tensor h = x + attn->forward((*norm1)(x), cache, layer);
  return h + (*drop)((*mlp)((*norm2)(h)));
}

TransformerLM::TransformerLM(const TransformerConfig& config, TensorOptions options, Generator* gen)
    : Layer("TransformerLM"), config_(config) {
  config.validate();
  token_embedding = register_module("token_embedding", std::make_shared<Embedding>(config.vocab_size, config.d_model, options, gen));
  if (config.positions == PositionEncoding::Learned)
    position_embedding =
        register_module("position_embedding", std::make_shared<Embedding>(config.context_length, config.d_model, options, gen));
  drop = register_module("drop", std::make_shared<Dropout>(config.dropout, gen));
  blocks = register_module("blocks", std::make_shared<ModuleList>());
  for (int64_t l = 0; l < config.num_layers; ++l) blocks->push_back(std::make_shared<TransformerBlock>(config, options, gen));
  norm_f = register_module("norm_f", make_norm(config, options));
  if (!config.tied_embeddings)
    lm_head = register_module("lm_head", std::make_shared<Linear>(config.d_model, config.vocab_size, false, options, gen));
  // GPT-2's initialisation: N(0, 0.02) everywhere, the projections into the residual stream
  // scaled down by √(2·layers) so the stream's variance does not grow with depth.
  const double residual_std = 0.02 / std::sqrt(2.0 * static_cast<double>(config.num_layers));
  for (const auto& [name, module] : named_modules()) {
    if (auto linear = dynamic_cast<Linear*>(module)) {
      const bool residual = name.ends_with("attn.proj") || name.ends_with("mlp.proj") || name.ends_with("mlp.w2");
      init::normal_(linear->weight, 0.0, residual ? residual_std : 0.02, gen);
      if (linear->bias.defined()) init::zeros_(linear->bias);
    } else if (auto table = dynamic_cast<Embedding*>(module)) {
      init::normal_(table->weight, 0.0, 0.02, gen);
    }
  }
}

Tensor TransformerLM::forward(const Tensor& ids) {
  auto s = scope();
  TALLY_CHECK(ids.dim() == 2 && ids.size(1) >= 1 && ids.size(1) <= config_.context_length,
              "TransformerLM: expected token ids [b, T] with 1 <= T <= context_length ", config_.context_length, ", got ",
              ids.sizes());
  Tensor x = embed(ids, 0);
  for (const auto& block : *blocks) x = (*std::static_pointer_cast<TransformerBlock>(block))(x);
  return head(x);
}

Tensor TransformerLM::forward(const Tensor& ids, KVCache& cache) {
  auto s = scope();
  TALLY_CHECK(ids.dim() == 2 && ids.size(1) >= 1 && ids.size(0) == cache.batch(),
              "TransformerLM: expected token ids [b, T] with b = the cache's batch ", cache.batch(), ", got ", ids.sizes());
  TALLY_CHECK(cache.num_layers() == config_.num_layers, "TransformerLM: a cache of ", cache.num_layers(), " layers for a model of ",
              config_.num_layers);
  const int64_t T = ids.size(1), start = cache.length();
  TALLY_CHECK(start + T <= std::min(cache.capacity(), config_.context_length), "TransformerLM: positions ", start, " to ", start + T,
              " do not fit the cache (capacity ", cache.capacity(), ") and context length ", config_.context_length);
  Tensor x = embed(ids, start);
  int64_t layer = 0;
  for (const auto& block : *blocks) x = std::static_pointer_cast<TransformerBlock>(block)->forward(x, cache, layer++);
  cache.advance(T);
  return head(x);
}

KVCache TransformerLM::make_kv_cache(int64_t batch, int64_t capacity) const {
  TALLY_CHECK(capacity >= 1 && capacity <= config_.context_length, "TransformerLM: a KV cache of ", capacity,
              " positions; it holds 1 to context_length = ", config_.context_length);
  const Tensor& w = token_embedding->weight;
  return KVCache(config_.num_layers, batch, config_.num_heads, capacity, config_.d_model / config_.num_heads,
                 TensorOptions(w.dtype()).device(w.device()));
}

Tensor TransformerLM::embed(const Tensor& ids, int64_t start) {
  const int64_t T = ids.size(1);
  Tensor x = (*token_embedding)(ids);  // [b, T, d]
  if (position_embedding) {
    auto p = ModuleScope("position_embedding");
    x = x + position_embedding->weight.narrow(0, start, T);
  }
  return (*drop)(x);
}

Tensor TransformerLM::head(const Tensor& x) {
  Tensor h = (*norm_f)(x);
  // Tied: the embedding table [V, d] is the head's weight [out, in], through linear as PyTorch's
  // GPTs do (so autocast casts the leaf weight once, from its cache).
  return lm_head ? (*lm_head)(h) : functional::linear(h, token_embedding->weight);
}

Tensor TransformerLM::loss(const Tensor& ids, const Tensor& targets) {
  Tensor logits = forward(ids);
  TALLY_CHECK(targets.sizes() == ids.sizes(), "TransformerLM: targets of shape ", targets.sizes(), " do not match ids ", ids.sizes());
  return cross_entropy(logits.reshape({-1, config_.vocab_size}), targets.reshape({-1}));
}

}  // namespace tally::nn
