#include "tally/train/export.h"

#include <string>
#include <vector>

#include "tally/core/autograd_meta.h"

namespace tally::train {

namespace {

/// tally's name of each of one block's GPT-2 tensors, and whether it is a Conv1D weight
/// (stored transposed). Note [GPT-2's layout].
struct BlockTensor {
  const char* hf;
  const char* tally;
  bool transposed;
};
constexpr BlockTensor kBlock[] = {
    {"ln_1.weight", "norm1.weight", false},        {"ln_1.bias", "norm1.bias", false},
    {"attn.c_attn.weight", "attn.qkv.weight", true}, {"attn.c_attn.bias", "attn.qkv.bias", false},
    {"attn.c_proj.weight", "attn.proj.weight", true}, {"attn.c_proj.bias", "attn.proj.bias", false},
    {"ln_2.weight", "norm2.weight", false},        {"ln_2.bias", "norm2.bias", false},
    {"mlp.c_fc.weight", "mlp.fc.weight", true},    {"mlp.c_fc.bias", "mlp.fc.bias", false},
    {"mlp.c_proj.weight", "mlp.proj.weight", true}, {"mlp.c_proj.bias", "mlp.proj.bias", false},
};

/// One tensor's GPT-2 name, tally name, and whether GPT-2 stores it transposed.
struct NamePair {
  std::string hf, tally;
  bool transposed;
};

/// Every tensor of a GPT-2-shaped model of `layers` blocks.
std::vector<NamePair> gpt2_names(int64_t layers, bool tied) {
  std::vector<NamePair> out = {{"transformer.wte.weight", "token_embedding.weight", false},
                               {"transformer.wpe.weight", "position_embedding.weight", false},
                               {"transformer.ln_f.weight", "norm_f.weight", false},
                               {"transformer.ln_f.bias", "norm_f.bias", false}};
  if (!tied) out.push_back({"lm_head.weight", "lm_head.weight", false});
  for (int64_t l = 0; l < layers; ++l)
    for (const BlockTensor& b : kBlock)
      out.push_back({"transformer.h." + std::to_string(l) + "." + b.hf, "blocks." + std::to_string(l) + "." + b.tally, b.transposed});
  return out;
}

/// Why `c` is not GPT-2-shaped, or "".
std::string not_gpt2(const nn::TransformerConfig& c) {
  if (c.positions != nn::PositionEncoding::Learned) return "its positions are rotary, GPT-2's are learned";
  if (c.norm != nn::NormKind::LayerNorm) return "its norm is RMSNorm, GPT-2's is LayerNorm";
  if (c.mlp != nn::MlpKind::Gelu) return "its MLP is SwiGLU, GPT-2's is GELU";
  if (c.hidden() != 4 * c.d_model) return "its MLP is " + std::to_string(c.hidden()) + " wide, GPT-2's is 4·d_model";
  if (!c.bias) return "it has no biases, GPT-2 has them";
  return "";
}

}  // namespace

WeightNames weight_names_from(const std::string& name) {
  if (name == "tally") return WeightNames::Tally;
  if (name == "hf-gpt2") return WeightNames::HfGpt2;
  throw ValueError("unknown weight names '" + name + "' (known: tally, hf-gpt2)");
}

StateDict export_weights(nn::TransformerLM& model, WeightNames names) {
  NoGradGuard no_grad;
  StateDict own;
  for (const auto& [name, p] : model.named_parameters()) own.insert(name, p.detach().to(kFloat32).contiguous().clone());
  if (names == WeightNames::Tally) return own;
  const std::string why = not_gpt2(model.config());
  TALLY_CHECK(why.empty(), "--names hf-gpt2: this model is not GPT-2-shaped: ", why);
  StateDict out;
  for (const NamePair& t : gpt2_names(model.config().num_layers, model.config().tied_embeddings)) {
    const Tensor& w = *own.find(t.tally);
    out.insert(t.hf, t.transposed ? w.t().contiguous() : w);
  }
  return out;
}

StateDict import_weights(const StateDict& file) {
  if (!file.contains("transformer.wte.weight")) {
    // tally's names: an export (bare names) or a checkpoint ("model." before each).
    bool checkpoint = false;
    for (const auto& [name, t] : file) checkpoint = checkpoint || name.starts_with("model.");
    return checkpoint ? with_prefix_removed(file, "model.") : file;
  }
  int64_t layers = 0;
  while (file.contains("transformer.h." + std::to_string(layers) + ".ln_1.weight")) ++layers;
  StateDict out;
  for (const NamePair& t : gpt2_names(layers, !file.contains("lm_head.weight"))) {
    const Tensor* w = file.find(t.hf);
    TALLY_CHECK(w, "GPT-2 weights: ", t.hf, " is missing (", layers, " blocks found)");
    out.insert(t.tally, t.transposed ? w->t().contiguous() : *w);
  }
  return out;
}

void load_weights(nn::TransformerLM& model, const StateDict& weights, const std::string& source) {
  try {
    model.load_state_dict(weights);  // every name and shape checked before anything is copied
  } catch (const ValueError& e) {
    throw ValueError("weights " + source + " do not fit the model: " + e.what());
  }
}

}  // namespace tally::train
