#pragma once
// Napkin math, the lecture's back-of-the-envelope questions as functions: how long training takes,
// the largest model that fits, what a transformer costs in parameters, FLOPs and bytes, and how big
// a tensor is. Every result keeps its inputs and, for each number, the formula that produced it,
// so `tally estimate` can always show its working.

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "tally/machine/device_specs.h"
#include "tally/dtype/dtype.h"

namespace tally::accounting {

/// A number with its unit and the formula (in the result's own symbols) that produced it.
struct Figure {
  /// The value.
  double value = 0.0;
  /// "FLOP", "FLOP/token", "days", "bytes", "parameters", "elements", ...
  std::string unit;
  /// Symbolic formula, e.g. "6·N·D".
  std::string formula;
};

/// A training precision recipe: bytes per parameter of each state it keeps.
struct Recipe {
  /// "fp32-adamw" or "bf16-mixed-adamw".
  std::string name;
  /// Bytes of the parameters the model computes with.
  double param_bytes;
  /// Bytes of each gradient.
  double grad_bytes;
  /// Bytes of the float32 master copy of the parameters (0 when they already are float32).
  double master_bytes;
  /// Bytes of the optimizer's per-parameter state (AdamW: float32 m and v).
  double optimizer_bytes;
  /// Bytes per element of the activations saved for backward.
  double activation_bytes;
  /// The sum spelled out, e.g. "4 (params) + 4 (grads) + 4+4 (AdamW m, v)".
  std::string description;
  /// param + grad + master + optimizer bytes.
  double bytes_per_param() const { return param_bytes + grad_bytes + master_bytes + optimizer_bytes; }
};

/// The recipe called `name` ("fp32-adamw", "bf16-mixed-adamw"); ValueError lists the known ones.
const Recipe& recipe(std::string_view name);

/// Names of the known recipes, comma-separated.
std::string known_recipes();

/// How many days training takes (the lecture's first question).
/// Attention's FLOPs per token over all T×T scores, forward and backward: 12·L·T·d (QKᵀ and P·V,
/// 2·T·d each per token and layer, ×3 with the backward).
double attention_flops_per_token(int64_t layers, int64_t d_model, int64_t context_length);
/// Model FLOPs per token by the PaLM paper's formula (Chowdhery et al. 2022, appendix B), the one
/// nanoGPT and llm.c report MFU by: 6·N + 12·L·H·Q·T, with N the parameters less the position
/// embeddings, H·Q = d_model and T the context length. What the hardware runs beyond the model's
/// maths (elementwise ops, the optimizer, recomputation) is left out: the ledger's count of every
/// FLOP gives HFU, hardware FLOPs utilisation.
double palm_flops_per_token(double non_embedding_params, int64_t layers, int64_t d_model, int64_t context_length);

struct TrainTime {
  /// N: parameters.
  double params;
  /// D: training tokens.
  double tokens;
  /// The per-device peak the time is computed against.
  machine::PromisedPeak peak;
  /// Number of devices.
  int64_t count;
  /// Assumed model FLOPs utilisation.
  double mfu;
  /// 6·N·D (Kaplan et al. 2020: 2 forward + 4 backward FLOPs per parameter per token).
  Figure total_flops;
  /// FLOPs the cluster does per day at that MFU.
  Figure flops_per_day;
  /// total_flops / flops_per_day.
  Figure days;
};

/// Days to train `params` parameters on `tokens` tokens on `count` devices of `peak` at `mfu`.
TrainTime train_time(double params, double tokens, const machine::PromisedPeak& peak, int64_t count, double mfu);

/// One data-parallel step at p devices, the lecture's napkin math with the communication term
/// (Note [Data-parallel step] in estimate.cpp).
struct DataParallelStep {
  double params;              ///< N
  double tokens_per_step;     ///< B·T over every device
  machine::PromisedPeak peak;  ///< per device
  int64_t count;              ///< p
  double mfu;                 ///< of the computation alone
  double bandwidth;           ///< β: bytes per second each device sends (and receives)
  double latency;             ///< α: seconds per message
  double grad_bytes;          ///< bytes per gradient element
  Figure compute_s, comm_bytes, comm_s, step_s_serial, step_s_overlapped, mfu_serial, mfu_overlapped;
};

/// The step of `params` parameters over `tokens_per_step` tokens on `count` devices of `peak` at
/// `mfu`, the gradients (`grad_bytes` each) all-reduced over links of `bandwidth` bytes/s and
/// `latency` s. ValueError for a value out of range, naming it.
DataParallelStep data_parallel_step(double params, double tokens_per_step, const machine::PromisedPeak& peak, int64_t count, double mfu,
                                    double bandwidth, double latency, double grad_bytes);

/// The largest model whose training states fit (the lecture's second question).
struct MaxParams {
  /// Memory of one device in bytes.
  double device_memory_bytes;
  /// Number of devices.
  int64_t count;
  /// The precision recipe.
  Recipe recipe;
  /// ZeRO stage of data parallelism, or empty for the lecture's pooled count (see Note [ZeRO stages]).
  std::optional<int> zero_stage;
  /// How the states are spread over the devices, in words.
  std::string sharding;
  /// Bytes each device holds per model parameter.
  Figure bytes_per_param_per_device;
  /// ⌊device_memory_bytes / bytes_per_param_per_device⌋: whole parameters.
  Figure max_params;
  /// What the count leaves out (activations, temporaries, fragmentation).
  std::string not_included;
};

/// Largest trainable parameter count for `count` devices of `device_memory_bytes` each.
MaxParams max_params(double device_memory_bytes, int64_t count, const Recipe& recipe,
                     std::optional<int> zero_stage = std::nullopt);

/// A GPT-2-style decoder-only transformer (pre-LayerNorm, learned position embeddings, 4·d MLP).
struct TransformerConfig {
  /// L: blocks.
  int64_t layers;
  /// d (Megatron's h): model width.
  int64_t d_model;
  /// a: attention heads (must divide d_model).
  int64_t heads;
  /// V: vocabulary size.
  int64_t vocab;
  /// T (s): sequence length, also the number of learned positions.
  int64_t seq_len;
  /// b: sequences per batch.
  int64_t batch;
  /// Whether the output projection reuses the token embedding (GPT-2 does).
  bool tied_embeddings = true;
};

/// One tensor a block saves for its backward pass.
struct SavedTensor {
  /// What it is and which backward needs it.
  std::string name;
  /// Its shape in the config's symbols, e.g. "[b, s, 4d]".
  std::string shape;
  /// Number of elements.
  double elements;
};

/// Parameters, FLOPs per token and memory of a transformer (the conventions are in estimate.cpp).
struct TransformerEstimate {
  /// The model.
  TransformerConfig config;
  /// The precision recipe for states and activations.
  Recipe recipe;

  /// Token embedding, V·d.
  Figure embedding_params;
  /// Learned positions, T·d.
  Figure position_params;
  /// One block: 12·d² weights + 13·d biases and LayerNorm scales/shifts.
  Figure params_per_layer;
  /// Final LayerNorm, 2·d.
  Figure final_norm_params;
  /// Output projection: 0 when tied, else V·d.
  Figure lm_head_params;
  /// Everything.
  Figure params;
  /// Kaplan's N: params without token and position embeddings (biases and norms included).
  Figure non_embedding_params;

  /// The lecture's rule 6·N with N = params.
  Figure six_n_flops_per_token;
  /// Training matmul FLOPs of the weight matrices, lm_head included (it runs even when tied).
  Figure matmul_flops_per_token;
  /// Training FLOPs of QKᵀ and attention·V over the full T×T scores, as a masked kernel does.
  Figure attention_flops_per_token;
  /// The same for a kernel that skips the masked half (causal), half of the above.
  Figure attention_flops_per_token_causal;
  /// matmul + full attention: what tally's ledger counts for a masked implementation.
  Figure flops_per_token;
  /// matmul + causal attention.
  Figure flops_per_token_causal;
  /// Kaplan et al. (2020): 6·(12·L·d²) + 6·L·T·d, embeddings and biases left out.
  Figure kaplan_flops_per_token;
  /// flops_per_token × b·T.
  Figure flops_per_step;

  /// Parameters at the recipe's parameter dtype.
  Figure weight_bytes;
  /// Gradients.
  Figure grad_bytes;
  /// Float32 master weights (mixed precision only).
  Figure master_bytes;
  /// Optimizer state.
  Figure optimizer_bytes;
  /// weights + grads + master + optimizer.
  Figure state_bytes;
  /// Tensors one block saves for backward, listed one by one.
  std::vector<SavedTensor> saved_per_layer;
  /// Bytes one block saves for backward.
  Figure activation_bytes_per_layer;
  /// Bytes saved after the last block (final LayerNorm input, lm_head input, logits).
  Figure activation_bytes_head;
  /// L · per layer + head.
  Figure activation_bytes;
  /// Korthikanti et al. (2022), 16-bit activations with dropout, for comparison: 34·s·b·h + 5·a·s²·b.
  Figure korthikanti_bytes_per_layer;
  /// state_bytes + activation_bytes.
  Figure total_bytes;
  /// Decoding: the keys and values every layer keeps for b sequences of T positions (nn::KVCache),
  /// 2·L·b·T·d elements at the recipe's activation dtype; not part of training's total.
  Figure kv_cache_bytes;
};

/// Parameters, training FLOPs per token and memory for `config` trained with `recipe`.
TransformerEstimate transformer(const TransformerConfig& config, const Recipe& recipe);

/// Bytes of a contiguous tensor (the lecture's fourth question).
struct TensorBytes {
  /// The shape.
  std::vector<int64_t> shape;
  /// The dtype.
  Dtype dtype;
  /// Product of the sizes.
  Figure numel;
  /// numel · element_size.
  Figure bytes;
};

/// Bytes of a contiguous tensor of `shape` and `dtype`; ValueError for a negative size or overflow.
TensorBytes tensor_bytes(const std::vector<int64_t>& shape, Dtype dtype);

}  // namespace tally::accounting
