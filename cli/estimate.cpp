// `tally estimate`: the lecture's napkin math from the command line. Each subcommand prints its
// inputs, then every figure with its formula; --json prints the same as one JSON object
// ({"command", "inputs", "results": {name: {value, unit, formula}}, "notes"}) for scripts.

#include <fmt/core.h>

#include <array>
#include <charconv>
#include <chrono>
#include <cmath>
#include <memory>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "cli/commands.h"
#include "tally/machine/device_specs.h"
#include "tally/accounting/estimate.h"
#include "tally/error/error.h"
#include "tally/nn/transformer.h"
#include "tally/kernels/cpu/attention_bf16.h"
#include "tally/tally.h"

namespace tally::cli {

namespace {

using accounting::Figure;
using nlohmann::json;
using NamedFigure = std::pair<const char*, const Figure*>;

// 70000000000 -> "70,000,000,000": digits grouped so the eye can count zeros.
std::string grouped(double v) {
  if (!(std::fabs(v) < 1e18) || v != std::floor(v)) return fmt::format("{:.6g}", v);
  std::string digits = fmt::format("{}", static_cast<int64_t>(std::fabs(v)));
  for (int i = static_cast<int>(digits.size()) - 3; i > 0; i -= 3) digits.insert(static_cast<size_t>(i), ",");
  return (v < 0 ? "-" : "") + digits;
}

// A count with its short scale, the way papers write model sizes: "124,439,808 (124.4 M)".
std::string count_text(double v) {
  const std::pair<double, const char*> scales[] = {{1e12, "T"}, {1e9, "B"}, {1e6, "M"}, {1e3, "K"}};
  for (const auto& [scale, suffix] : scales)
    if (std::fabs(v) >= scale) return fmt::format("{} ({:.4g} {})", grouped(v), v / scale, suffix);
  return grouped(v);
}

// Bytes in binary (MiB, as the lecture's 2304 MiB) and decimal (GB, as datasheets) units.
std::string bytes_text(double v) {
  const double mib = v / (1024.0 * 1024.0);
  if (mib < 1) return fmt::format("{} bytes", grouped(v));
  if (mib < 1024) return fmt::format("{} bytes = {:.6g} MiB = {:.4g} GB", grouped(v), mib, v / 1e9);
  return fmt::format("{} bytes = {:.6g} MiB = {:.4g} GiB = {:.4g} GB", grouped(v), mib, mib / 1024, v / 1e9);
}

std::string value_text(const Figure& f) {
  if (f.unit == "bytes") return bytes_text(f.value);
  if (f.unit == "parameters" || f.unit == "elements") return count_text(f.value) + " " + f.unit;
  if (f.unit == "days") return fmt::format("{:.1f} days", f.value);
  return fmt::format("{:.4g} {}", f.value, f.unit);
}

json figure_json(const Figure& f) { return {{"value", f.value}, {"unit", f.unit}, {"formula", f.formula}}; }

json peak_json(const machine::PromisedPeak& p) {
  return {{"device", p.device}, {"dtype", p.dtype}, {"sparse", p.sparse}, {"flops_per_sec", p.flops_per_sec},
          {"label", p.label()}};
}

json recipe_json(const accounting::Recipe& r) {
  return {{"name", r.name},
          {"param_bytes", r.param_bytes},
          {"grad_bytes", r.grad_bytes},
          {"master_bytes", r.master_bytes},
          {"optimizer_bytes", r.optimizer_bytes},
          {"activation_bytes", r.activation_bytes},
          {"bytes_per_param", r.bytes_per_param()},
          {"description", r.description}};
}

void print_figures(const char* heading, const std::vector<NamedFigure>& figures) {
  fmt::print("{}\n", heading);
  for (const auto& [name, f] : figures) fmt::print("  {:<34} {}\n  {:<34}   = {}\n", name, value_text(*f), "", f->formula);
}

void emit(const char* command, const json& inputs, const std::vector<NamedFigure>& figures, const json& notes) {
  json results = json::object();
  for (const auto& [name, f] : figures) results[name] = figure_json(*f);
  fmt::print("{}\n", json{{"command", command}, {"inputs", inputs}, {"results", results}, {"notes", notes}}.dump(2));
}

// --- train-time --------------------------------------------------------------------------------

struct TrainTimeArgs {
  double params = 0, tokens = 0, mfu = 0.5;
  std::string device = "h100", dtype = "bfloat16";
  int64_t count = 1;
  bool sparse = false, json = false;
};

void run_train_time(const TrainTimeArgs& a) {
  const auto peak = machine::promised_peak(machine::device_spec(a.device), a.dtype, a.sparse);
  const auto r = accounting::train_time(a.params, a.tokens, peak, a.count, a.mfu);
  const std::vector<NamedFigure> figures = {{"total_flops", &r.total_flops}, {"flops_per_day", &r.flops_per_day}, {"days", &r.days}};
  const char* convention = "6 FLOPs per parameter per token (2 forward + 4 backward; Kaplan et al. 2020), attention ignored";
  if (a.json) {
    emit("train-time", {{"params", r.params}, {"tokens", r.tokens}, {"peak", peak_json(r.peak)}, {"count", r.count}, {"mfu", r.mfu}},
         figures, {convention});
    return;
  }
  fmt::print("Training time: {}\n\nInputs\n", convention);
  fmt::print("  N      parameters   {}\n", count_text(r.params));
  fmt::print("  D      tokens       {}\n", count_text(r.tokens));
  fmt::print("  peak   per device   {}\n", r.peak.label());
  fmt::print("  count  devices      {}\n", r.count);
  fmt::print("  MFU                 {:g}\n\n", r.mfu);
  print_figures("Results", figures);
}


// --- data-parallel ------------------------------------------------------------------------------

struct DataParallelArgs {
  double params = 0, tokens_per_step = 0, mfu = 0.5, bandwidth = 0, latency = 0, grad_bytes = 4;
  std::string device = "h100", dtype = "bfloat16";
  int64_t count = 8;
  bool json = false;
};

void run_data_parallel(const DataParallelArgs& a) {
  const auto peak = machine::promised_peak(machine::device_spec(a.device), a.dtype, false);
  const auto r = accounting::data_parallel_step(a.params, a.tokens_per_step, peak, a.count, a.mfu, a.bandwidth, a.latency, a.grad_bytes);
  const std::vector<NamedFigure> figures = {{"compute_s", &r.compute_s},         {"comm_bytes", &r.comm_bytes},
                                            {"comm_s", &r.comm_s},               {"step_s_serial", &r.step_s_serial},
                                            {"step_s_overlapped", &r.step_s_overlapped}, {"mfu_serial", &r.mfu_serial},
                                            {"mfu_overlapped", &r.mfu_overlapped}};
  const char* convention = "6·N FLOPs per token, a ring all-reduce of the gradients over α-β links (Note [Data-parallel step])";
  if (a.json) {
    emit("data-parallel",
         {{"params", r.params}, {"tokens_per_step", r.tokens_per_step}, {"peak", peak_json(r.peak)}, {"count", r.count},
          {"mfu", r.mfu}, {"bandwidth", r.bandwidth}, {"latency", r.latency}, {"grad_bytes", r.grad_bytes}},
         figures, {convention});
    return;
  }
  fmt::print("Data-parallel step: {}\n\nInputs\n", convention);
  fmt::print("  N      parameters        {}\n", count_text(r.params));
  fmt::print("  B·T    tokens per step   {}\n", count_text(r.tokens_per_step));
  fmt::print("  peak   per device        {}\n", r.peak.label());
  fmt::print("  p      devices           {}\n", r.count);
  fmt::print("  MFU    of the computation {:g}\n", r.mfu);
  fmt::print("  β      link bandwidth    {:.4g} bytes/s\n", r.bandwidth);
  fmt::print("  α      link latency      {:.4g} s\n", r.latency);
  fmt::print("  g      gradient bytes    {:g}\n\n", r.grad_bytes);
  print_figures("Results", figures);
}
// --- max-params --------------------------------------------------------------------------------

struct MaxParamsArgs {
  std::string device, recipe = "fp32-adamw";
  std::optional<double> memory;
  int64_t count = 1;
  std::optional<int> zero;
  bool json = false;
};

void run_max_params(const MaxParamsArgs& a) {
  TALLY_CHECK(!a.device.empty() || a.memory, "estimate max-params: give --device or --memory (bytes per device)");
  const double memory = a.device.empty() ? *a.memory : machine::device_spec(a.device).memory_bytes;
  const std::string memory_from = a.device.empty() ? "--memory" : machine::device_spec(a.device).name;
  const auto r = accounting::max_params(memory, a.count, accounting::recipe(a.recipe), a.zero);
  const std::vector<NamedFigure> figures = {{"bytes_per_param_per_device", &r.bytes_per_param_per_device},
                                            {"max_params", &r.max_params}};
  if (a.json) {
    json zero = r.zero_stage ? json(*r.zero_stage) : json(nullptr);
    emit("max-params",
         {{"device_memory_bytes", r.device_memory_bytes}, {"memory_from", memory_from}, {"count", r.count},
          {"recipe", recipe_json(r.recipe)}, {"zero_stage", zero}, {"sharding", r.sharding}},
         figures, {r.not_included});
    return;
  }
  fmt::print("Largest trainable model: device memory / bytes per parameter per device\n\nInputs\n");
  fmt::print("  M      memory per device   {} ({})\n", bytes_text(r.device_memory_bytes), memory_from);
  fmt::print("  N_d    devices             {}\n", r.count);
  fmt::print("  recipe                     {}: {} = {:g} bytes/param\n", r.recipe.name, r.recipe.description,
             r.recipe.bytes_per_param());
  fmt::print("         p, g, w, o          {:g}, {:g}, {:g}, {:g} (params, grads, master, optimizer)\n", r.recipe.param_bytes,
             r.recipe.grad_bytes, r.recipe.master_bytes, r.recipe.optimizer_bytes);
  fmt::print("  sharding                   {}\n\n", r.sharding);
  print_figures("Results", figures);
  fmt::print("\nNote: {}.\n", r.not_included);
}

// --- transformer -------------------------------------------------------------------------------

/// One training step (forward, loss, backward) of the real model on the meta device: what the
/// ledger and the memory tracker measure, with no bytes allocated and no kernel run.
struct MetaStep {
  int64_t params = 0;
  int64_t matmul_flops = 0, attention_flops = 0, all_flops = 0;
  std::array<int64_t, kNumMemoryCategories> peak{};
  int64_t peak_total = 0;
  double seconds = 0;
};

MetaStep meta_step(const accounting::TransformerConfig& config) {
  const auto start = std::chrono::steady_clock::now();
  MetaStep m;
  accounting::MemoryTracker tracker{Device(kMeta)};
  accounting::FlopCounter counter;
  nn::TransformerLM model(nn::gpt2_config(config), TensorOptions(kFloat32).device(kMeta));
  const TensorOptions ids = TensorOptions(kInt64).device(kMeta);
  model.loss(empty({config.batch, config.seq_len}, ids), empty({config.batch, config.seq_len}, ids)).backward();
  m.params = model.num_parameters();
  // The weight matmuls: matmul's rows and the linear layers' addmm, less its bias adds.
  m.matmul_flops = counter.op("matmul", accounting::Phase::Forward).flops + counter.op("matmul", accounting::Phase::Backward).flops +
                   counter.op("addmm", accounting::Phase::Forward).flops -
                   config.batch * config.seq_len * nn::linear_bias_adds_per_row(model);
  // Attention is one op forward and one backward (products, softmax, the backward's recompute).
  m.attention_flops = counter.op("scaled_dot_product_attention", accounting::Phase::Forward).flops +
                      counter.op("scaled_dot_product_attention_backward", accounting::Phase::Backward).flops;
  m.all_flops = counter.total_flops();
  for (int c = 0; c < kNumMemoryCategories; ++c) m.peak[c] = tracker.peak_allocated_bytes(static_cast<MemoryCategory>(c));
  m.peak_total = tracker.peak_allocated_bytes();
  m.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  return m;
}

struct TransformerArgs {
  accounting::TransformerConfig config{0, 0, 0, 0, 0, 0, true};
  std::string recipe = "bf16-mixed-adamw";
  bool untied = false, json = false;
};

void run_transformer(const TransformerArgs& a) {
  auto config = a.config;
  config.tied_embeddings = !a.untied;
  const auto r = accounting::transformer(config, accounting::recipe(a.recipe));
  const std::vector<NamedFigure> params = {
      {"embedding_params", &r.embedding_params}, {"position_params", &r.position_params},
      {"params_per_layer", &r.params_per_layer}, {"final_norm_params", &r.final_norm_params},
      {"lm_head_params", &r.lm_head_params},     {"params", &r.params},
      {"non_embedding_params", &r.non_embedding_params}};
  const std::vector<NamedFigure> flops = {
      {"six_n_flops_per_token", &r.six_n_flops_per_token},
      {"matmul_flops_per_token", &r.matmul_flops_per_token},
      {"attention_flops_per_token", &r.attention_flops_per_token},
      {"attention_flops_per_token_causal", &r.attention_flops_per_token_causal},
      {"flops_per_token", &r.flops_per_token},
      {"flops_per_token_causal", &r.flops_per_token_causal},
      {"kaplan_flops_per_token", &r.kaplan_flops_per_token},
      {"flops_per_step", &r.flops_per_step}};
  const std::vector<NamedFigure> memory = {
      {"weight_bytes", &r.weight_bytes},
      {"grad_bytes", &r.grad_bytes},
      {"master_bytes", &r.master_bytes},
      {"optimizer_bytes", &r.optimizer_bytes},
      {"state_bytes", &r.state_bytes},
      {"activation_bytes_per_layer", &r.activation_bytes_per_layer},
      {"activation_bytes_head", &r.activation_bytes_head},
      {"activation_bytes", &r.activation_bytes},
      {"korthikanti_bytes_per_layer", &r.korthikanti_bytes_per_layer},
      {"total_bytes", &r.total_bytes},
      {"kv_cache_bytes", &r.kv_cache_bytes}};
  const json notes = {
      "parameters: GPT-2 convention (token + learned position embeddings, biases, 2 LayerNorms per block, final "
      "LayerNorm, lm_head tied unless --untied)",
      "FLOPs: matmuls only at 2·M·N·K, training = 3 × forward; attention over the full T×T scores (masked "
      "implementation) or halved (causal-skipping kernel, Kaplan's 6·L·T·d)",
      "activations: tensors saved for backward by a pre-LN block without dropout, at the recipe's activation dtype; "
      "fused attention would not keep P (the a·b·T² term)",
      "measured: tally's model runs attention as one fused op that keeps no P and skips the causal blocks above the "
      "diagonal (blocks of 64 query rows, or strips of 6 in the bf16 kernel), and its backward recomputes the scores "
      "(5 products where the formula counts 4): for long sequences its attention FLOPs lie between the two attention "
      "figures; for T of 64 or less no block is skipped and they exceed the full one. Its activations lack the a·b·T² term"};
  // The ledger counts in 64-bit integers (at most 9.2e18): a step whose formula FLOPs pass 2^61
  // (the elementwise ops and the backward's recompute come on top) is not run, where its counts
  // would wrap into nonsense.
  const double step_tokens = static_cast<double>(config.batch) * static_cast<double>(config.seq_len);
  const double formula_step_flops = r.flops_per_token.value * step_tokens;
  const bool measurable = formula_step_flops < 0x1p61;
  const MetaStep m = measurable ? meta_step(config) : MetaStep{};
  json meta_peak = json::object();
  for (int c = 0; c < kNumMemoryCategories; ++c) meta_peak[std::string(memory_category_name(static_cast<MemoryCategory>(c)))] = m.peak[c];
  const std::string unmeasurable = fmt::format("not run: one step is {:.3g} FLOPs by the formula, past what the ledger's 64-bit counters hold (9.2e18)",
                                               formula_step_flops);
  const json meta_json = !measurable ? json{{"skipped", unmeasurable}}
                                     : json{{"params", m.params}, {"matmul_flops_per_step", m.matmul_flops},
                                            {"attention_flops_per_step", m.attention_flops}, {"all_op_flops_per_step", m.all_flops},
                                            {"peak_bytes_by_category", meta_peak}, {"peak_bytes", m.peak_total}, {"seconds", m.seconds}};
  if (a.json) {
    json saved = json::array();
    for (const auto& s : r.saved_per_layer) saved.push_back({{"name", s.name}, {"shape", s.shape}, {"elements", s.elements}});
    std::vector<NamedFigure> all = params;
    all.insert(all.end(), flops.begin(), flops.end());
    all.insert(all.end(), memory.begin(), memory.end());
    emit("transformer",
         {{"layers", config.layers}, {"d_model", config.d_model}, {"heads", config.heads}, {"vocab", config.vocab},
          {"seq_len", config.seq_len}, {"batch", config.batch}, {"tied_embeddings", config.tied_embeddings},
          {"recipe", recipe_json(r.recipe)}, {"saved_per_layer", saved}, {"meta_run", meta_json}},
         all, notes);
    return;
  }
  fmt::print("Transformer (GPT-2 style, pre-LayerNorm, MLP width 4·d)\n\nInputs\n");
  fmt::print("  L {}   d {}   a {}   V {}   T {}   b {}   embeddings {}\n", config.layers, config.d_model, config.heads,
             config.vocab, config.seq_len, config.batch, config.tied_embeddings ? "tied" : "untied");
  fmt::print("  recipe {}: {}; activations in {:g}-byte elements\n\n", r.recipe.name, r.recipe.description,
             r.recipe.activation_bytes);
  print_figures("Parameters", params);
  fmt::print("\n");
  print_figures("Training FLOPs", flops);
  fmt::print("\nSaved for backward, per layer\n");
  for (const auto& s : r.saved_per_layer) fmt::print("  {:<54} {:<13} {}\n", s.name, s.shape, grouped(s.elements));
  fmt::print("\n");
  print_figures("Memory", memory);
  if (!measurable) {
    fmt::print("\nMeasured: one float32 training step of the model itself on the meta device: {}\n", unmeasurable);
  } else {
    fmt::print("\nMeasured: one float32 training step of the model itself (tally::nn::TransformerLM) on the meta device, {:.3f} s\n",
               m.seconds);
    fmt::print("  {:<34} {:>22}   formula {}\n", "params", grouped(static_cast<double>(m.params)), grouped(r.params.value));
    fmt::print("  {:<34} {:>22}   formula {}\n", "matmul_flops_per_step", grouped(static_cast<double>(m.matmul_flops)),
               grouped(r.matmul_flops_per_token.value * step_tokens));
    fmt::print("  {:<34} {:>22}   (the attention op: causal blocks of {} query rows, softmax, backward's recompute)\n",
               "attention_flops_per_step", grouped(static_cast<double>(m.attention_flops)), kernels::kAttentionBlockRows);
    fmt::print("  {:<34} {:>22}   (every op on the ledger)\n", "all_op_flops_per_step", grouped(static_cast<double>(m.all_flops)));
    for (int c = 0; c < kNumMemoryCategories; ++c) {
      if (m.peak[c] == 0) continue;
      fmt::print("  {:<34} {:>22}\n", "peak_" + std::string(memory_category_name(static_cast<MemoryCategory>(c))) + "_bytes",
                 grouped(static_cast<double>(m.peak[c])));
    }
    fmt::print("  {:<34} {:>22}   (no optimizer state: one step's forward and backward)\n", "peak_bytes", grouped(static_cast<double>(m.peak_total)));
  }
  fmt::print("\nConventions\n");
  for (const auto& n : notes) fmt::print("  - {}\n", n.get<std::string>());
}

// --- tensor ------------------------------------------------------------------------------------

// "49152,12288" or "4*12288,12288": comma-separated sizes, each a product of integers.
std::vector<int64_t> parse_shape(const std::string& text) {
  std::vector<int64_t> shape;
  if (text.empty()) return shape;  // a 0-d tensor
  size_t start = 0;
  while (true) {
    const size_t comma = text.find(',', start);
    const std::string dim = text.substr(start, comma == std::string::npos ? std::string::npos : comma - start);
    int64_t size = 1;
    size_t f = 0;
    while (true) {
      const size_t star = dim.find('*', f);
      const std::string factor = dim.substr(f, star == std::string::npos ? std::string::npos : star - f);
      int64_t v = 0;
      const auto [end, ec] = std::from_chars(factor.data(), factor.data() + factor.size(), v);
      TALLY_CHECK(ec == std::errc() && end == factor.data() + factor.size() && !factor.empty(),
                  "estimate tensor: --shape expects comma-separated integer sizes like 49152,12288 or 4*12288,12288; "
                  "got '", text, "'");
      TALLY_CHECK(!__builtin_mul_overflow(size, v, &size), "estimate tensor: size '", dim, "' overflows int64");
      if (star == std::string::npos) break;
      f = star + 1;
    }
    shape.push_back(size);
    if (comma == std::string::npos) break;
    start = comma + 1;
  }
  return shape;
}

struct TensorArgs {
  std::string shape, dtype = "float32";
  bool json = false;
};

void run_tensor(const TensorArgs& a) {
  const auto r = accounting::tensor_bytes(parse_shape(a.shape), dtype_from_name(a.dtype));
  const std::vector<NamedFigure> figures = {{"numel", &r.numel}, {"bytes", &r.bytes}};
  std::string shape_text;
  for (int64_t s : r.shape) shape_text += (shape_text.empty() ? "" : ", ") + std::to_string(s);
  if (a.json) {
    emit("tensor", {{"shape", r.shape}, {"dtype", std::string(dtype_name(r.dtype))}, {"element_size", element_size(r.dtype)}},
         figures, {"a contiguous tensor; views share their base's storage and add no bytes"});
    return;
  }
  fmt::print("Tensor memory: numel · element_size\n\nInputs\n  shape    [{}]\n  dtype    {} ({} bytes/element)\n\n",
             shape_text, dtype_name(r.dtype), element_size(r.dtype));
  print_figures("Results", figures);
}

}  // namespace

void add_estimate_command(CLI::App& app) {
  auto* est = app.add_subcommand("estimate", "Napkin math: training time, largest model, transformer costs, tensor bytes");
  est->require_subcommand(1);

  auto tt = std::make_shared<TrainTimeArgs>();
  auto* c = est->add_subcommand("train-time", "Days to train: 6·params·tokens / (peak · MFU · count · 86400)");
  c->add_option("--params", tt->params, "Model parameters N, e.g. 70e9")->required();
  c->add_option("--tokens", tt->tokens, "Training tokens D, e.g. 15e12")->required();
  c->add_option("--device", tt->device, "Device: " + machine::known_devices())->capture_default_str();
  c->add_option("--dtype", tt->dtype, "Dtype of the promised peak (bfloat16, float16, float8, tf32, float32)")->capture_default_str();
  c->add_flag("--sparse", tt->sparse, "Use the datasheet's 2:4-sparsity peak instead of the dense one");
  c->add_option("--count", tt->count, "Number of devices")->capture_default_str();
  c->add_option("--mfu", tt->mfu, "Assumed model FLOPs utilisation, in (0, 1]")->capture_default_str();
  c->add_flag("--json", tt->json, "Print JSON");
  c->callback([tt] { run_train_time(*tt); });

  auto dp = std::make_shared<DataParallelArgs>();
  c = est->add_subcommand("data-parallel", "One data-parallel step at p devices: computation, the gradients' all-reduce, MFU");
  c->add_option("--params", dp->params, "Model parameters N, e.g. 124e6")->required();
  c->add_option("--tokens-per-step", dp->tokens_per_step, "Tokens per step over every device, B·T, e.g. 524288")->required();
  c->add_option("--bandwidth", dp->bandwidth, "Bytes per second each device sends, e.g. 450e9 (NVLink 4) or 50e9 (400 Gb/s)")->required();
  c->add_option("--latency", dp->latency, "Seconds per message, e.g. 5e-6")->capture_default_str();
  c->add_option("--device", dp->device, "Device: " + machine::known_devices())->capture_default_str();
  c->add_option("--dtype", dp->dtype, "Dtype of the promised peak (bfloat16, float16, float8, tf32, float32)")->capture_default_str();
  c->add_option("--count", dp->count, "Number of devices p")->capture_default_str();
  c->add_option("--mfu", dp->mfu, "Model FLOPs utilisation of the computation alone, in (0, 1]")->capture_default_str();
  c->add_option("--grad-bytes", dp->grad_bytes, "Bytes per gradient element (4: float32, 2: bfloat16)")->capture_default_str();
  c->add_flag("--json", dp->json, "Print JSON");
  c->callback([dp] { run_data_parallel(*dp); });

  auto mp = std::make_shared<MaxParamsArgs>();
  c = est->add_subcommand("max-params", "Largest model whose parameters, gradients and optimizer state fit (no activations)");
  auto* dev = c->add_option("--device", mp->device, "Device whose memory to use: " + machine::known_devices());
  c->add_option("--memory", mp->memory, "Bytes per device instead of --device, e.g. 80e9")->excludes(dev);
  c->add_option("--count", mp->count, "Number of devices")->capture_default_str();
  c->add_option("--recipe", mp->recipe, "Precision recipe: " + accounting::known_recipes())->capture_default_str();
  c->add_option("--zero", mp->zero, "ZeRO stage 0-3 of data parallelism (default: the lecture's pooled count)");
  c->add_flag("--json", mp->json, "Print JSON");
  c->callback([mp] { run_max_params(*mp); });

  auto tf = std::make_shared<TransformerArgs>();
  c = est->add_subcommand("transformer", "Parameters, training FLOPs per token and memory of a GPT-2-style transformer");
  c->add_option("--layers", tf->config.layers, "Blocks L")->required();
  c->add_option("--d-model", tf->config.d_model, "Width d")->required();
  c->add_option("--heads", tf->config.heads, "Attention heads a")->required();
  c->add_option("--vocab", tf->config.vocab, "Vocabulary size V")->required();
  c->add_option("--seq-len", tf->config.seq_len, "Sequence length T (also the learned positions)")->required();
  c->add_option("--batch", tf->config.batch, "Sequences per batch b")->required();
  c->add_option("--recipe", tf->recipe, "Precision recipe: " + accounting::known_recipes())->capture_default_str();
  c->add_flag("--untied", tf->untied, "Give the output projection its own V·d weights");
  c->add_flag("--json", tf->json, "Print JSON");
  c->callback([tf] { run_transformer(*tf); });

  auto te = std::make_shared<TensorArgs>();
  c = est->add_subcommand("tensor", "Bytes of a contiguous tensor");
  c->add_option("--shape", te->shape, "Sizes, e.g. 49152,12288 or 4*12288,12288")->required();
  c->add_option("--dtype", te->dtype, "PyTorch dtype name (float32, bfloat16, ...) or alias (fp16, bf16)")->capture_default_str();
  c->add_flag("--json", te->json, "Print JSON");
  c->callback([te] { run_tensor(*te); });
}

}  // namespace tally::cli
