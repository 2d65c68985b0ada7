#pragma once
// What `tally train` runs: one flat set of named fields, each with its type, default, range and
// help text in one table (config.cpp), from which the JSON config file, the command-line flags,
// the checks and the resume compatibility check are all derived.

#include <cstdint>
#include <nlohmann/json_fwd.hpp>
#include <string>
#include <vector>

#include "tally/nn/transformer.h"

namespace tally::train {

struct TrainConfig {
  // Data.
  std::string data;                 ///< token file (raw, .npy or .txt by its extension); empty: the built-in corpus
  std::string data_dtype = "auto";  ///< element type of a raw token file; auto: uint8 for .txt, else uint16
  std::string val_data;             ///< validation token file; empty: the last val_fraction of the data
  double val_fraction = 0.1;        ///< without val_data, the data's tail held out for validation (0: none)
  int64_t corpus_bytes = 4 << 20;    ///< size of the built-in corpus

  // Model: a GPT-style decoder (nn::TransformerLM).
  int64_t vocab_size = 256;
  int64_t context_length = 128;
  int64_t d_model = 128;
  int64_t num_layers = 4;
  int64_t num_heads = 4;
  int64_t d_ff = 0;  ///< 0: 4·d_model
  std::string positions = "learned";  ///< learned | rotary
  std::string mlp = "gelu";           ///< gelu | swiglu
  std::string norm = "layernorm";     ///< layernorm | rmsnorm
  bool tied_embeddings = true;
  double dropout = 0.0;

  // Optimizer (AdamW) and schedule (linear warm-up, cosine decay to min_lr).
  double lr = 3e-3;
  double min_lr = 3e-4;
  int64_t warmup_steps = 20;
  double weight_decay = 0.1;
  double beta1 = 0.9;
  double beta2 = 0.95;
  double eps = 1e-8;
  double grad_clip = 1.0;  ///< max total gradient norm; 0 turns clipping off
  bool decay_all = false;  ///< weight decay on every tensor, not only on those of 2+ dims (Note [Weight decay groups])

  std::string init_from;  ///< a new run's starting weights (tally's or GPT-2's names, train/export.h); empty: random

  // The run.
  int64_t batch_size = 16;      ///< sequences per micro-batch, on each rank
  int64_t grad_accum_steps = 1;  ///< micro-batches per rank per optimizer step

  // Data parallelism (under mpirun; tally/dist).
  std::string reduce = "fast";  ///< fast | ordered (Note [Ordered reduction] in dist/grad_reducer.h)
  double bucket_mb = 25;        ///< gradient bucket size, MiB
  bool verify_replicas = false;  ///< hash the parameters after every step and compare the ranks'
  int64_t zero = 0;              ///< 1: the optimizer's state sharded over the ranks (Note [ZeRO-1] in dist/zero.h)
  int64_t steps = 500;
  int64_t seed = 0;
  std::string precision = "fp32";  ///< fp32 | bf16 | bf16-params | fp16 | fp8 (train/precision.h)
  int64_t inject_inf_step = 0;     ///< testing the fp16 loss scaler: an inf in one gradient at this step; 0: never
  int64_t threads = 0;  ///< 0: every core
  int64_t checkpoint_interval = 100;
  int64_t keep = 3;  ///< checkpoints kept
  int64_t log_interval = 10;
  int64_t eval_interval = 100;  ///< steps between validation losses (0: none)
  int64_t eval_batches = 4;     ///< batches of the validation data each evaluation reads
  std::string out;  ///< run directory; `tally train` picks runs/<UTC date-time> when empty

  /// The model this config describes.
  nn::TransformerConfig model() const;
  /// Raises ValueError naming the first field out of range (and its value).
  void validate() const;
};

/// The config as a JSON object, every field present.
nlohmann::json to_json(const TrainConfig& config);
/// Overlay the fields of `j` (a JSON object) on `config`, each value checked on its own: ValueError
/// for a key that is not a field (listing the known ones), a value of the wrong type, or one out of
/// its range; `source` ("config.json", "flags") starts each message. The fields' combination
/// (warmup_steps <= steps, ...) is not checked: layers (defaults, a file, flags) are overlaid in
/// turn and the merged config validated once.
void overlay_json(TrainConfig& config, const nlohmann::json& j, const std::string& source);
/// overlay_json, then validate the result (config unchanged on an error).
void apply_json(TrainConfig& config, const nlohmann::json& j, const std::string& source);
/// Read a JSON config file and overlay it (overlay_json). IOError when it cannot be read (a
/// directory, say); ValueError naming the file when it is not JSON.
void overlay_json_file(TrainConfig& config, const std::string& path);
/// overlay_json_file, then validate the result.
void apply_json_file(TrainConfig& config, const std::string& path);

/// One field of the table, for the CLI's flags.
struct ConfigField {
  std::string name;  ///< the JSON key; the flag is --name with '_' as '-'
  std::string help;
  enum Kind { Int, Float, String, Bool } kind;
  std::vector<std::string> choices;  ///< the values a string may take (any when empty)
  bool testing_only = false;          ///< a switch for tests, left out of the user's help
};
/// Every field, in the table's order.
const std::vector<ConfigField>& config_fields();
/// Parse a flag's text as field `name`'s JSON value (ValueError naming the flag when it does not parse).
nlohmann::json parse_field_text(const std::string& name, const std::string& text);

/// The fields a checkpoint must share with the config resuming it (model, data, batch, seed):
/// one line per field that differs, "d_model: checkpoint 128, config 256"; empty when compatible.
std::vector<std::string> incompatible_fields(const nlohmann::json& checkpoint_config, const TrainConfig& config);

}  // namespace tally::train
