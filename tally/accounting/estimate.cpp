#include "tally/accounting/estimate.h"

#include <array>
#include <cctype>
#include <cmath>
#include <utility>

#include <fmt/core.h>

#include "tally/error/error.h"

namespace tally::accounting {

double attention_flops_per_token(int64_t layers, int64_t d_model, int64_t context_length) {
  return 12 * static_cast<double>(layers) * static_cast<double>(d_model) * static_cast<double>(context_length);
}

double palm_flops_per_token(double non_embedding_params, int64_t layers, int64_t d_model, int64_t context_length) {
  return 6 * non_embedding_params + attention_flops_per_token(layers, d_model, context_length);
}

namespace {

void check_positive(const char* what, const char* name, double v) {
  TALLY_CHECK(std::isfinite(v) && v > 0, what, ": ", name, " must be positive and finite, got ", v);
}

std::string lower(std::string_view s) {
  std::string out(s);
  for (char& c : out) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return out;
}

// Both recipes keep AdamW's m and v in float32 (4 + 4 bytes); they differ in what the model
// computes with. Mixed precision does not save state memory (16 bytes either way, the lecture's
// caveat 1): it saves activation memory and time.
const std::array<Recipe, 2>& recipes() {
  static const std::array<Recipe, 2> all = {{
      {"fp32-adamw", 4, 4, 0, 8, 4, "4 (float32 params) + 4 (float32 grads) + 4+4 (AdamW m, v)"},
      {"bf16-mixed-adamw", 2, 2, 4, 8, 2,
       "2 (bfloat16 params) + 2 (bfloat16 grads) + 4 (float32 master) + 4+4 (AdamW m, v)"},
  }};
  return all;
}

}  // namespace

std::string known_recipes() {
  std::string out;
  for (const auto& r : recipes()) out += (out.empty() ? "" : ", ") + r.name;
  return out;
}

const Recipe& recipe(std::string_view name) {
  const std::string key = lower(name);
  for (const auto& r : recipes())
    if (r.name == key) return r;
  throw ValueError(detail::str_cat("unknown recipe '", name, "'; known recipes: ", known_recipes()));
}

// The lecture's rule: 6 FLOPs per parameter per token (2 forward, 4 backward), attention ignored;
// a day is 86400 s of the whole cluster at the given MFU.
TrainTime train_time(double params, double tokens, const machine::PromisedPeak& peak, int64_t count, double mfu) {
  check_positive("train_time", "params", params);
  check_positive("train_time", "tokens", tokens);
  check_positive("train_time", "peak FLOP/s", peak.flops_per_sec);
  TALLY_CHECK(count >= 1, "train_time: count must be at least 1 device, got ", count);
  TALLY_CHECK(std::isfinite(mfu) && mfu > 0 && mfu <= 1, "train_time: mfu must be in (0, 1], got ", mfu);
  TrainTime r{params, tokens, peak, count, mfu, {}, {}, {}};
  r.total_flops = {6 * params * tokens, "FLOP", "6·N·D"};
  r.flops_per_day = {peak.flops_per_sec * mfu * static_cast<double>(count) * 86400, "FLOP/day",
                     "peak·MFU·count·86400 s"};
  r.days = {r.total_flops.value / r.flops_per_day.value, "days", "total_flops / flops_per_day"};
  return r;
}

// Note [Data-parallel step]
// Each of p devices computes 6·N FLOPs for each of its B·T/p tokens, at MFU of its peak; then the
// gradients (N of g bytes) are all-reduced: a ring sends and receives 2·(p−1)/p·N·g bytes on each
// device, in 2·(p−1) messages, α + bytes/β each way (the α-β model tally/dist measures at a run's
// start). Without overlap the step is their sum; with the all-reduce hidden behind backward as far
// as it goes (DDP's buckets) it is the larger of the two. MFU at p devices is the computation's
// MFU scaled by the share of the step it fills.
DataParallelStep data_parallel_step(double params, double tokens_per_step, const machine::PromisedPeak& peak, int64_t count, double mfu,
                                    double bandwidth, double latency, double grad_bytes) {
  check_positive("data_parallel_step", "params", params);
  check_positive("data_parallel_step", "tokens per step", tokens_per_step);
  check_positive("data_parallel_step", "peak FLOP/s", peak.flops_per_sec);
  check_positive("data_parallel_step", "bandwidth", bandwidth);
  check_positive("data_parallel_step", "gradient bytes", grad_bytes);
  TALLY_CHECK(count >= 1, "data_parallel_step: count must be at least 1 device, got ", count);
  TALLY_CHECK(std::isfinite(mfu) && mfu > 0 && mfu <= 1, "data_parallel_step: mfu must be in (0, 1], got ", mfu);
  TALLY_CHECK(std::isfinite(latency) && latency >= 0, "data_parallel_step: latency must be 0 or more seconds, got ", latency);
  DataParallelStep r{params, tokens_per_step, peak, count, mfu, bandwidth, latency, grad_bytes, {}, {}, {}, {}, {}, {}, {}};
  const auto p = static_cast<double>(count);
  r.compute_s = {6 * params * tokens_per_step / (p * peak.flops_per_sec * mfu), "s", "6·N·(B·T) / (p·peak·MFU)"};
  r.comm_bytes = {2 * (p - 1) / p * params * grad_bytes, "bytes", "2·(p−1)/p·N·g (a ring all-reduce, sent and received per device)"};
  r.comm_s = {count > 1 ? 2 * (p - 1) * latency + r.comm_bytes.value / bandwidth : 0.0, "s", "2·(p−1)·α + comm_bytes / β"};
  r.step_s_serial = {r.compute_s.value + r.comm_s.value, "s", "compute_s + comm_s (no overlap)"};
  r.step_s_overlapped = {std::max(r.compute_s.value, r.comm_s.value), "s", "max(compute_s, comm_s) (the all-reduce hidden behind backward)"};
  r.mfu_serial = {mfu * r.compute_s.value / r.step_s_serial.value, "", "MFU·compute_s / step_s_serial"};
  r.mfu_overlapped = {mfu * r.compute_s.value / r.step_s_overlapped.value, "", "MFU·compute_s / step_s_overlapped"};
  return r;
}

// Note [ZeRO stages]: with data parallelism over N_d = count devices, each device holds, per
// parameter, p (params) + g (grads) + w (float32 master) + o (optimizer) bytes, except what ZeRO
// (Rajbhandari et al. 2020) shards over the N_d devices: stage 1 the optimizer states (w + o),
// stage 2 also g, stage 3 also p. Stage 0 is plain replication, so adding devices adds no room.
// Without a stage, the count is the lecture's: all devices' memory pooled, every state held
// exactly once (model parallelism, or ZeRO-3, which gives the same number).
MaxParams max_params(double device_memory_bytes, int64_t count, const Recipe& recipe, std::optional<int> zero_stage) {
  check_positive("max_params", "device memory bytes", device_memory_bytes);
  TALLY_CHECK(count >= 1, "max_params: count must be at least 1 device, got ", count);
  TALLY_CHECK(!zero_stage || (*zero_stage >= 0 && *zero_stage <= 3), "max_params: ZeRO stage must be 0, 1, 2 or 3, got ",
              zero_stage.value_or(-1));
  const double n = static_cast<double>(count), p = recipe.param_bytes, g = recipe.grad_bytes,
               w = recipe.master_bytes, o = recipe.optimizer_bytes, total = recipe.bytes_per_param();
  MaxParams r{device_memory_bytes, count, recipe, zero_stage, {}, {}, {}, {}};
  auto& b = r.bytes_per_param_per_device;
  if (!zero_stage) {
    r.sharding = "pooled: every state held once across all devices (the lecture's count; equals ZeRO stage 3)";
    b = {total / n, "bytes", fmt::format("(p + g + w + o) / N_d = ({:g} + {:g} + {:g} + {:g}) / {:g}", p, g, w, o, n)};
    // count·M / B rather than M / (B / count), so the lecture's (80e9·8)/16 comes out exactly;
    // a model has a whole number of parameters, hence the floor.
    r.max_params = {std::floor(device_memory_bytes * n / total), "parameters", "⌊N_d·M / (p + g + w + o)⌋"};
  } else {
    switch (*zero_stage) {
      case 0:
        r.sharding = "data parallel, ZeRO stage 0: every device holds a full replica of every state";
        b = {total, "bytes", fmt::format("p + g + w + o = {:g} + {:g} + {:g} + {:g}", p, g, w, o)};
        break;
      case 1:
        r.sharding = "data parallel, ZeRO stage 1: optimizer states (master + moments) sharded";
        b = {p + g + (w + o) / n, "bytes", fmt::format("p + g + (w + o)/N_d = {:g} + {:g} + ({:g} + {:g})/{:g}", p, g, w, o, n)};
        break;
      case 2:
        r.sharding = "data parallel, ZeRO stage 2: optimizer states and gradients sharded";
        b = {p + (g + w + o) / n, "bytes", fmt::format("p + (g + w + o)/N_d = {:g} + ({:g} + {:g} + {:g})/{:g}", p, g, w, o, n)};
        break;
      default:
        r.sharding = "data parallel, ZeRO stage 3: optimizer states, gradients and parameters sharded";
        b = {total / n, "bytes", fmt::format("(p + g + w + o)/N_d = ({:g} + {:g} + {:g} + {:g})/{:g}", p, g, w, o, n)};
    }
    r.max_params = {std::floor(device_memory_bytes / b.value), "parameters", "⌊M / bytes_per_param_per_device⌋"};
  }
  r.not_included = "activations (they grow with batch size and sequence length), temporary buffers, "
                   "communication buffers and allocator fragmentation are not included";
  return r;
}

// Note [Transformer conventions]:
//  - Parameters follow GPT-2: token embedding V·d, learned positions T·d, per block
//    LayerNorm 2d + qkv 3d²+3d + attention projection d²+d + LayerNorm 2d + MLP 4d²+4d and 4d²+d
//    = 12d² + 13d, final LayerNorm 2d, and an lm_head tied to the token embedding (or V·d more).
//    GPT-2 small (L=12, d=768, V=50257, T=1024) has 124,439,808.
//  - FLOPs count matmuls only, 2·M·N·K each (the ledger's convention), and training = 3 × forward
//    (the 2 : 4 : 6 rule). Weight matmuls give 6·(12·L·d² + V·d) per token: lm_head runs even when
//    its weights are tied. Attention's QKᵀ and P·V cost 2·T·d each per token per layer forward, so
//    12·L·T·d in training over the full T×T scores, which is what a masked implementation computes
//    (Chinchilla's Appendix F counts it so); a kernel that skips the masked half does 6·L·T·d, which
//    is Kaplan et al.'s term. Softmax, GELU, LayerNorm, bias and optimizer FLOPs are left out
//    (they are O(T·d) and O(N), and the ledger lists them apart).
//  - Activations are the tensors each block saves for backward in a pre-LN block without dropout,
//    listed in saved_per_layer at the recipe's activation dtype: 16·b·T·d + a·b·T² elements. Each
//    LayerNorm's per-row mean and rstd (2·b·T float32) are left out as negligible. Korthikanti et
//    al.'s 34·T·b·d + 5·a·T²·b bytes is the same list in 16 bits plus dropout masks and the dropout
//    output of P, given beside it. Fused (flash) attention does not keep P: drop the a·b·T² term.
TransformerEstimate transformer(const TransformerConfig& c, const Recipe& recipe) {
  const std::pair<const char*, int64_t> sizes[] = {{"layers", c.layers}, {"d_model", c.d_model}, {"heads", c.heads},
                                                   {"vocab", c.vocab},   {"seq_len", c.seq_len}, {"batch", c.batch}};
  for (const auto& [name, v] : sizes)
    TALLY_CHECK(v >= 1, "transformer: ", name, " must be at least 1, got ", v);
  TALLY_CHECK(c.d_model % c.heads == 0, "transformer: d_model (", c.d_model, ") must be divisible by heads (", c.heads, ")");
  const double L = static_cast<double>(c.layers), d = static_cast<double>(c.d_model), a = static_cast<double>(c.heads),
               V = static_cast<double>(c.vocab), T = static_cast<double>(c.seq_len), b = static_cast<double>(c.batch);
  const double e = recipe.activation_bytes;
  TransformerEstimate r{};
  r.config = c;
  r.recipe = recipe;

  r.embedding_params = {V * d, "parameters", "V·d"};
  r.position_params = {T * d, "parameters", "T·d"};
  r.params_per_layer = {12 * d * d + 13 * d, "parameters", "12·d² + 13·d (qkv 3d²+3d, proj d²+d, mlp 8d²+5d, 2 LayerNorms 4d)"};
  r.final_norm_params = {2 * d, "parameters", "2·d"};
  r.lm_head_params = c.tied_embeddings ? Figure{0, "parameters", "0 (tied to the token embedding)"}
                                       : Figure{V * d, "parameters", "V·d (untied)"};
  r.params = {r.embedding_params.value + r.position_params.value + L * r.params_per_layer.value +
                  r.final_norm_params.value + r.lm_head_params.value,
              "parameters", c.tied_embeddings ? "V·d + T·d + L·(12·d² + 13·d) + 2·d" : "2·V·d + T·d + L·(12·d² + 13·d) + 2·d"};
  r.non_embedding_params = {L * r.params_per_layer.value + 2 * d, "parameters", "L·(12·d² + 13·d) + 2·d"};

  r.six_n_flops_per_token = {6 * r.params.value, "FLOP/token", "6·N (N = all parameters)"};
  r.matmul_flops_per_token = {6 * (12 * L * d * d + V * d), "FLOP/token", "6·(12·L·d² + V·d)"};
  r.attention_flops_per_token = {attention_flops_per_token(c.layers, c.d_model, c.seq_len), "FLOP/token",
                                 "12·L·T·d (QKᵀ and P·V over all T×T scores, ×3 for backward)"};
  r.attention_flops_per_token_causal = {r.attention_flops_per_token.value / 2, "FLOP/token", "6·L·T·d (masked half skipped)"};
  r.flops_per_token = {r.matmul_flops_per_token.value + r.attention_flops_per_token.value, "FLOP/token",
                       "6·(12·L·d² + V·d) + 12·L·T·d"};
  r.flops_per_token_causal = {r.matmul_flops_per_token.value + r.attention_flops_per_token_causal.value, "FLOP/token",
                              "6·(12·L·d² + V·d) + 6·L·T·d"};
  r.kaplan_flops_per_token = {6 * 12 * L * d * d + 6 * L * T * d, "FLOP/token", "6·(12·L·d²) + 6·L·T·d (Kaplan et al. 2020)"};
  r.flops_per_step = {r.flops_per_token.value * b * T, "FLOP", "flops_per_token·b·T"};

  const double n = r.params.value;
  r.weight_bytes = {n * recipe.param_bytes, "bytes", fmt::format("N·{:g}", recipe.param_bytes)};
  r.grad_bytes = {n * recipe.grad_bytes, "bytes", fmt::format("N·{:g}", recipe.grad_bytes)};
  r.master_bytes = {n * recipe.master_bytes, "bytes", fmt::format("N·{:g}", recipe.master_bytes)};
  r.optimizer_bytes = {n * recipe.optimizer_bytes, "bytes", fmt::format("N·{:g}", recipe.optimizer_bytes)};
  r.state_bytes = {n * recipe.bytes_per_param(), "bytes", fmt::format("N·{:g} ({})", recipe.bytes_per_param(), recipe.description)};

  const double bt = b * T;
  r.saved_per_layer = {
      {"ln1 input (LayerNorm backward)", "[b, T, d]", bt * d},
      {"ln1 output = qkv input (qkv weight gradient)", "[b, T, d]", bt * d},
      {"Q and K (QKᵀ backward)", "[b, T, 2d]", 2 * bt * d},
      {"V (P·V backward)", "[b, T, d]", bt * d},
      {"softmax output P (softmax and P·V backward)", "[b, a, T, T]", a * b * T * T},
      {"attention output = proj input (proj weight gradient)", "[b, T, d]", bt * d},
      {"ln2 input (LayerNorm backward)", "[b, T, d]", bt * d},
      {"ln2 output = fc input (fc weight gradient)", "[b, T, d]", bt * d},
      {"fc output = GELU input (GELU backward)", "[b, T, 4d]", 4 * bt * d},
      {"GELU output = fc_proj input (fc_proj weight gradient)", "[b, T, 4d]", 4 * bt * d},
  };
  double per_layer_elements = 0;
  for (const auto& s : r.saved_per_layer) per_layer_elements += s.elements;
  r.activation_bytes_per_layer = {per_layer_elements * e, "bytes", fmt::format("(16·b·T·d + a·b·T²)·{:g}", e)};
  r.activation_bytes_head = {(2 * bt * d + bt * V) * e, "bytes",
                             fmt::format("(2·b·T·d + b·T·V)·{:g} (final LayerNorm input, lm_head input, logits)", e)};
  r.activation_bytes = {L * r.activation_bytes_per_layer.value + r.activation_bytes_head.value, "bytes",
                        "L·per_layer + head"};
  r.korthikanti_bytes_per_layer = {34 * T * b * d + 5 * a * T * T * b, "bytes",
                                   "34·T·b·d + 5·a·T²·b (Korthikanti et al. 2022, 16-bit, with dropout)"};
  r.total_bytes = {r.state_bytes.value + r.activation_bytes.value, "bytes", "state_bytes + activation_bytes"};
  r.kv_cache_bytes = {2 * L * b * T * d * e, "bytes", fmt::format("2·L·b·T·d·{:g} (decoding's keys and values, every layer)", e)};
  return r;
}

TensorBytes tensor_bytes(const std::vector<int64_t>& shape, Dtype dtype) {
  int64_t numel = 1;
  std::string product;
  for (int64_t s : shape) {
    TALLY_CHECK(s >= 0, "tensor_bytes: sizes must be non-negative, got ", s, " in the shape");
    TALLY_CHECK(!__builtin_mul_overflow(numel, s, &numel), "tensor_bytes: the number of elements overflows int64");
    product += (product.empty() ? "" : "·") + std::to_string(s);
  }
  int64_t bytes = 0;
  TALLY_CHECK(!__builtin_mul_overflow(numel, element_size(dtype), &bytes), "tensor_bytes: the byte count overflows int64");
  // A 0-d tensor holds one element: the empty product.
  return {shape, dtype, {static_cast<double>(numel), "elements", product.empty() ? "1 (0-d tensor)" : product},
          {static_cast<double>(bytes), "bytes", fmt::format("numel·element_size = {}·{}", numel, element_size(dtype))}};
}

}  // namespace tally::accounting
