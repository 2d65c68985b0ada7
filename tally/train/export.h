#pragma once
// A model's weights in and out, without the optimizer: tally's own names (the model's state
// dict), or Hugging Face GPT-2's names and layouts for a GPT-2-shaped model, so that weights
// trained here load elsewhere and weights trained elsewhere start a run here.
//
// Note [GPT-2's layout]
// Hugging Face's GPT2LMHeadModel names its tensors transformer.wte / wpe / h.{i}.ln_1, attn.c_attn,
// attn.c_proj, ln_2, mlp.c_fc, mlp.c_proj / ln_f, and keeps its projections in Conv1D layers, whose
// weight is [in, out]: the transpose of a Linear's [out, in]. c_attn packs q, k and v along its
// output as tally's qkv does (q's d features, then k's, then v's, each head after head), so the
// mapping is a rename and a transpose. The head is tied to wte (HF's safetensors omit lm_head);
// an untied head is written as lm_head.weight, [vocab, d] like a Linear. HF's GPT-2 computes GELU
// with the tanh approximation ("gelu_new") and tally's MLP with erf: the weights are the same, the
// logits differ by that approximation (about 1e-3 in a trained model's logits).

#include <string>

#include "tally/core/ordered_dict.h"
#include "tally/nn/transformer.h"

namespace tally::train {

enum class WeightNames : uint8_t { Tally, HfGpt2 };

/// "tally" or "hf-gpt2"; ValueError naming the choices otherwise.
WeightNames weight_names_from(const std::string& name);

/// The model's weights under `names`, contiguous float32 copies (a view of no one's storage).
/// ValueError naming what differs when hf-gpt2 is asked of a model that is not GPT-2-shaped
/// (learned positions, LayerNorm, a 4·d GELU MLP, biases).
StateDict export_weights(nn::TransformerLM& model, WeightNames names);

/// Weights read from a file in tally's names (a model's state dict, or a checkpoint's "model.*"),
/// or in GPT-2's (recognised by transformer.wte.weight), as tally's names and layouts.
StateDict import_weights(const StateDict& file_tensors);

/// The model's load_state_dict (strict: every missing, unexpected or mis-shaped tensor named, with
/// both shapes, before anything is copied), its error naming `source`, the file. On a meta-device
/// model it checks the names and shapes alone.
void load_weights(nn::TransformerLM& model, const StateDict& weights, const std::string& source);

}  // namespace tally::train
