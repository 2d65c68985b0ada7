#include "tally/train/config.h"

#include <algorithm>
#include <charconv>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <limits>
#include <nlohmann/json.hpp>
#include <sstream>
#include <variant>

#include "tally/error/error.h"

namespace tally::train {

namespace {

using nlohmann::json;

/// One row of the table: the member it names and what it may hold.
struct Field {
  const char* name;
  std::variant<int64_t TrainConfig::*, double TrainConfig::*, std::string TrainConfig::*, bool TrainConfig::*> member;
  const char* help;
  double min = -std::numeric_limits<double>::infinity();  ///< numbers: the smallest allowed
  bool min_exclusive = false;                             ///< numbers: min itself refused
  double max = std::numeric_limits<double>::infinity();   ///< numbers: the largest allowed
  std::vector<std::string> choices = {};                  ///< strings: the allowed values (any when empty)
  bool resume_must_match = false;                         ///< part of what a checkpoint was trained on
  bool max_exclusive = false;                             ///< numbers: max itself refused
  bool testing_only = false;                              ///< a switch for tests (kept out of --help)
};

constexpr double kInf = std::numeric_limits<double>::infinity();

const std::vector<Field>& fields() {
  static const std::vector<Field> table = {
      {"data", &TrainConfig::data, "token file (raw little-endian array, .npy, or .txt: its bytes); empty: the built-in corpus", -kInf,
       false, kInf, {}, true},
      {"data_dtype", &TrainConfig::data_dtype, "element type of a raw token file (auto: uint8 for a .txt file, uint16 otherwise)", -kInf,
       false, kInf, {"auto", "uint8", "uint16", "int32", "uint32", "int64"}, true},
      {"val_data", &TrainConfig::val_data, "validation token file, read as data is (empty: the data's last val_fraction)"},
      {"val_fraction", &TrainConfig::val_fraction,
       "without val_data, the fraction of the data at its end held out for validation (0: no validation)", 0, false, 0.5, {}, true},
      {"corpus_bytes", &TrainConfig::corpus_bytes, "bytes of the built-in corpus", 4096, false, 1e9, {}, true},
      {"vocab_size", &TrainConfig::vocab_size, "vocabulary size; every token id must be below it", 2, false, 1e8, {}, true},
      {"context_length", &TrainConfig::context_length, "tokens per sequence", 1, false, 1e6, {}, true},
      {"d_model", &TrainConfig::d_model, "model width", 1, false, 1e6, {}, true},
      {"num_layers", &TrainConfig::num_layers, "transformer blocks", 1, false, 1e4, {}, true},
      {"num_heads", &TrainConfig::num_heads, "attention heads (must divide d_model)", 1, false, 1e4, {}, true},
      {"d_ff", &TrainConfig::d_ff, "MLP hidden width (0: 4·d_model)", 0, false, 1e7, {}, true},
      {"positions", &TrainConfig::positions, "position encoding", -kInf, false, kInf, {"learned", "rotary"}, true},
      {"mlp", &TrainConfig::mlp, "feed-forward kind", -kInf, false, kInf, {"gelu", "swiglu"}, true},
      {"norm", &TrainConfig::norm, "normalisation", -kInf, false, kInf, {"layernorm", "rmsnorm"}, true},
      {"tied_embeddings", &TrainConfig::tied_embeddings, "share the embedding and output matrices", -kInf, false, kInf, {}, true},
      {"dropout", &TrainConfig::dropout, "dropout probability", 0, false, 1, {}, false, true},
      {"init_from", &TrainConfig::init_from,
       "a new run starts from these weights, a .safetensors file in tally's names (an export or a checkpoint) or Hugging Face "
       "GPT-2's, every tensor's shape checked by name (empty: random initialisation)"},
      {"lr", &TrainConfig::lr, "peak learning rate (AdamW)", 0, true, 10},
      {"min_lr", &TrainConfig::min_lr, "learning rate at the end of the cosine decay", 0, false, 10},
      {"warmup_steps", &TrainConfig::warmup_steps, "steps of linear warm-up", 0, false, 1e12},
      {"weight_decay", &TrainConfig::weight_decay, "AdamW's decoupled weight decay", 0, false, 10},
      {"beta1", &TrainConfig::beta1, "AdamW's beta1", 0, false, 1, {}, false, true},
      {"beta2", &TrainConfig::beta2, "AdamW's beta2", 0, false, 1, {}, false, true},
      {"eps", &TrainConfig::eps, "AdamW's epsilon", 0, false, 1},
      {"grad_clip", &TrainConfig::grad_clip, "max total gradient norm (0: no clipping)", 0, false, 1e12},
      {"decay_all", &TrainConfig::decay_all,
       "weight decay on every tensor; by default only on those of 2 or more dims, not on biases and norms (GPT-2's groups)", -kInf,
       false, kInf, {}, true},
      {"batch_size", &TrainConfig::batch_size, "sequences per micro-batch on each rank (a step: batch_size × grad_accum_steps × ranks)", 1,
       false, 1e7, {}, true},
      {"grad_accum_steps", &TrainConfig::grad_accum_steps, "micro-batches per rank per optimizer step (gradient accumulation)", 1, false,
       1e6},
      {"reduce", &TrainConfig::reduce,
       "under mpirun, how the ranks' gradients are summed: fast (MPI's all-reduce, once per step) or ordered (in rank order on every "
       "micro-step: bit-identical to one process with grad_accum_steps × ranks)",
       -kInf, false, kInf, {"fast", "ordered"}},
      {"bucket_mb", &TrainConfig::bucket_mb, "under mpirun, the gradient buckets' size in MiB (each sent as soon as it is full)", 0, true,
       1e6},
      {"zero", &TrainConfig::zero,
       "under mpirun, ZeRO stage: 1 shards the optimizer's state over the ranks (each keeps 1/ranks of it); 0 keeps it whole "
       "on every rank",
       0, false, 1},
      {"verify_replicas", &TrainConfig::verify_replicas,
       "hash the parameters after every step, check that every rank holds the same, and write the hash to metrics.jsonl", -kInf, false,
       kInf},
      {"steps", &TrainConfig::steps, "optimizer steps in the whole run", 1, false, 1e12},
      {"seed", &TrainConfig::seed, "seeds the initialisation, the batches and dropout", 0, false, 9.0e15, {}, true},
      {"precision", &TrainConfig::precision,
       "fp32; bf16 or fp16 autocast (float32 master weights; fp16 with loss scaling); fp8: bf16 with FP8 linear layers; "
       "bf16-params: bfloat16 parameters, no master weights, stochastic rounding",
       -kInf, false, kInf, {"fp32", "bf16", "bf16-params", "fp16", "fp8"}, true},
      {"inject_inf_step", &TrainConfig::inject_inf_step,
       "testing: put an inf into one gradient at this step, for the fp16 loss scaler to skip (0: never)", 0, false, 1e12, {}, false,
       false, true},
      {"threads", &TrainConfig::threads, "CPU threads (0: every core)", 0, false, 4096},
      {"checkpoint_interval", &TrainConfig::checkpoint_interval, "steps between checkpoints", 1, false, 1e12},
      {"keep", &TrainConfig::keep, "checkpoints kept (the newest)", 1, false, 1e6},
      {"log_interval", &TrainConfig::log_interval, "steps between progress lines when not on a terminal", 1, false, 1e12},
      {"eval_interval", &TrainConfig::eval_interval,
       "steps between validation losses, and the last step (0: none); the best is kept as checkpoints/best.safetensors", 0, false, 1e12},
      {"eval_batches", &TrainConfig::eval_batches, "batches of batch_size sequences each validation reads, the same ones every time", 1,
       false, 1e6},
      {"out", &TrainConfig::out, "run directory: config, metrics.jsonl, summary.json, checkpoints (default: runs/<UTC date-time>)"},
  };
  return table;
}

const Field* find_field(const std::string& name) {
  for (const Field& f : fields())
    if (name == f.name) return &f;
  return nullptr;
}

std::string known_names() {
  std::string s;
  for (const Field& f : fields()) s += (s.empty() ? "" : ", ") + std::string(f.name);
  return s;
}

std::string number_text(double v) {
  if (!std::isfinite(v)) return std::isnan(v) ? "nan" : v > 0 ? "inf" : "-inf";  // JSON would print null
  if (v == std::floor(v) && std::fabs(v) < 1e15) return std::to_string(static_cast<int64_t>(v));
  json j = v;
  return j.dump();
}

/// Raises unless `v` is within the field's range.
void check_range(const Field& f, double v, const std::string& source) {
  const bool low = f.min_exclusive ? v <= f.min : v < f.min;
  const bool high = f.max_exclusive ? v >= f.max : v > f.max;
  if (!low && !high && std::isfinite(v)) return;
  std::string range = f.min_exclusive ? "> " + number_text(f.min) : ">= " + number_text(f.min);
  if (std::isfinite(f.max)) range += (f.max_exclusive ? " and < " : " and <= ") + number_text(f.max);
  throw ValueError(source + ": " + f.name + " must be " + range + ", got " + number_text(v));
}

/// Raises unless `v` has the field's type and lies in its range or choices.
void check_value(const Field& f, const json& v, const std::string& source) {
  auto type_error = [&](const char* want) {
    std::string got = v.dump();  // at most kMaxConfigDepth levels deep: the file's parse refused deeper
    if (got.size() > 80) got = got.substr(0, 60) + "... (" + std::to_string(got.size()) + " characters)";
    throw ValueError(source + ": " + f.name + " must be " + want + ", got " + got);
  };
  std::visit(
      [&](auto member) {
        using T = std::remove_reference_t<decltype(TrainConfig{}.*member)>;
        if constexpr (std::is_same_v<T, int64_t>) {
          if (!v.is_number_integer()) type_error("an integer");
          check_range(f, v.get<double>(), source);
        } else if constexpr (std::is_same_v<T, double>) {
          if (!v.is_number()) type_error("a number");
          check_range(f, v.get<double>(), source);
        } else if constexpr (std::is_same_v<T, bool>) {
          if (!v.is_boolean()) type_error("true or false");
        } else {
          if (!v.is_string()) type_error("a string");
          const std::string s = v.get<std::string>();
          if (!f.choices.empty() && std::find(f.choices.begin(), f.choices.end(), s) == f.choices.end()) {
            std::string list;
            for (const auto& ch : f.choices) list += (list.empty() ? "" : ", ") + ch;
            throw ValueError(source + ": " + f.name + " must be one of " + list + ", got \"" + s + "\"");
          }
        }
      },
      f.member);
}

void set_field(TrainConfig& c, const Field& f, const json& v, const std::string& source) {
  check_value(f, v, source);
  std::visit([&](auto member) { c.*member = v.get<std::remove_reference_t<decltype(c.*member)>>(); }, f.member);
}

json field_json(const TrainConfig& c, const Field& f) {
  return std::visit([&](auto member) { return json(c.*member); }, f.member);
}

}  // namespace

nn::TransformerConfig TrainConfig::model() const {
  nn::TransformerConfig m;
  m.vocab_size = vocab_size;
  m.context_length = context_length;
  m.d_model = d_model;
  m.num_layers = num_layers;
  m.num_heads = num_heads;
  m.d_ff = d_ff;
  m.positions = positions == "rotary" ? nn::PositionEncoding::Rotary : nn::PositionEncoding::Learned;
  m.mlp = mlp == "swiglu" ? nn::MlpKind::SwiGLU : nn::MlpKind::Gelu;
  m.norm = norm == "rmsnorm" ? nn::NormKind::RMSNorm : nn::NormKind::LayerNorm;
  m.tied_embeddings = tied_embeddings;
  m.dropout = dropout;
  return m;
}

void TrainConfig::validate() const {
  for (const Field& f : fields()) check_value(f, field_json(*this, f), "config");
  TALLY_CHECK(d_model % num_heads == 0, "config: num_heads (", num_heads, ") must divide d_model (", d_model, ")");
  TALLY_CHECK(warmup_steps <= steps, "config: warmup_steps (", warmup_steps, ") must not exceed steps (", steps, "): lower --warmup-steps");
  TALLY_CHECK(min_lr <= lr, "config: min_lr (", min_lr, ") must not exceed lr (", lr, ")");
  TALLY_CHECK(zero == 0 || decay_all || weight_decay == 0, "config: zero 1 steps flat shards that cut across biases and weights, so ",
              "it cannot keep weight decay off the biases and norms: add --decay-all true (or --weight-decay 0)");
  TALLY_CHECK(!data.empty() || vocab_size >= 256, "config: the built-in corpus is bytes: vocab_size must be >= 256, got ", vocab_size);
  TALLY_CHECK(!data.empty() || context_length < corpus_bytes, "config: the built-in corpus of corpus_bytes (", corpus_bytes,
              ") tokens is too short for context_length (", context_length, "): raise --corpus-bytes");
  TALLY_CHECK(inject_inf_step == 0 || precision == "fp16", "config: inject_inf_step (", inject_inf_step,
              ") needs precision fp16: only the loss scaler skips a step with an inf gradient (precision is ", precision, ")");
  TALLY_CHECK(inject_inf_step <= steps, "config: inject_inf_step (", inject_inf_step, ") is past the last step (", steps,
              "): no step would get the inf");
  TALLY_CHECK(zero == 0 || (precision != "fp16" && precision != "bf16-params"), "config: zero 1 shards float32 parameters' optimizer ",
              "state and needs the gradients unscaled: it does not run with precision ", precision, " yet (fp32, bf16 and fp8 do)");
  model().validate();
}

json to_json(const TrainConfig& config) {
  json j = json::object();
  for (const Field& f : fields()) j[f.name] = field_json(config, f);
  return j;
}

void overlay_json(TrainConfig& config, const json& j, const std::string& source) {
  TALLY_CHECK(j.is_object(), source, ": expected a JSON object of settings, got ", j.type_name());
  TrainConfig next = config;
  for (const auto& [key, value] : j.items()) {
    const Field* f = find_field(key);
    TALLY_CHECK(f, source, ": unknown key \"", key, "\" (known: ", known_names(), ")");
    set_field(next, *f, value, source);
  }
  config = next;
}

void apply_json(TrainConfig& config, const json& j, const std::string& source) {
  TrainConfig next = config;
  overlay_json(next, j, source);
  next.validate();
  config = next;
}

namespace {

/// The whole text of `path`; IOError naming it when it is not a readable regular file.
/// A config is a small JSON object; anything far larger is the wrong file (a token file passed as
/// --config), which would otherwise be read whole into memory.
constexpr std::uintmax_t kMaxConfigBytes = 1 << 20;
/// Levels of nesting a config file may have: its values are numbers, strings and booleans, one
/// level down. The cap keeps a hostile file's depth away from recursive code (dump()).
constexpr int kMaxConfigDepth = 16;

std::string read_config_text(const std::string& path) {
  std::error_code ec;
  const auto status = std::filesystem::status(path, ec);
  // An ifstream opens a directory and then fails mid-read with a message that names no file, and
  // reads a device such as /dev/zero forever.
  TALLY_CHECK_TYPE(IOError, !ec && std::filesystem::exists(status), "cannot read config file ", path, ": ",
                   ec ? ec.message() : "no such file");
  TALLY_CHECK_TYPE(IOError, std::filesystem::is_regular_file(status), "cannot read config file ", path, ": it is ",
                   std::filesystem::is_directory(status) ? "a directory" : "not a regular file");
  const std::uintmax_t size = std::filesystem::file_size(path, ec);
  TALLY_CHECK(ec || size <= kMaxConfigBytes, "config file ", path, " holds ", size, " bytes: a config is a JSON object of a few "
              "hundred bytes (at most ", kMaxConfigBytes, "); is it the right file?");
  std::ifstream in(path, std::ios::binary);
  TALLY_CHECK_TYPE(IOError, in.good(), "cannot read config file ", path);
  std::ostringstream text;
  text << in.rdbuf();
  TALLY_CHECK_TYPE(IOError, !in.bad(), "cannot read config file ", path, ": read error");
  return text.str();
}

/// The JSON of config file `path`, refusing what the parser alone would let through: a key twice
/// in one object (the parser keeps the last, so `"steps": 2, "steps": 4` ran 4 steps silently)
/// and nesting deeper than kMaxConfigDepth.
json parse_config_text(const std::string& text, const std::string& path) {
  std::vector<std::vector<std::string>> keys;  // of each object being parsed
  const json::parser_callback_t check = [&](int depth, json::parse_event_t event, json& parsed) {
    TALLY_CHECK(depth <= kMaxConfigDepth, path, ": nested more than ", kMaxConfigDepth, " levels deep; a config is one object of settings");
    if (event == json::parse_event_t::object_start) keys.emplace_back();
    if (event == json::parse_event_t::object_end) keys.pop_back();
    if (event == json::parse_event_t::key) {
      const auto& name = parsed.get_ref<const std::string&>();
      std::vector<std::string>& seen = keys.back();
      TALLY_CHECK(std::find(seen.begin(), seen.end(), name) == seen.end(), path, ": key \"", name, "\" appears twice; give each setting once");
      seen.push_back(name);
    }
    return true;
  };
  try {
    return json::parse(text, check);
  } catch (const json::parse_error& e) {
    throw ValueError(path + ": not valid JSON: " + e.what());
  } catch (const json::exception& e) {  // valid JSON that a double cannot hold (1e400)
    throw ValueError(path + ": a value out of range: " + e.what());
  }
}

}  // namespace

void overlay_json_file(TrainConfig& config, const std::string& path) {
  overlay_json(config, parse_config_text(read_config_text(path), path), path);
}

void apply_json_file(TrainConfig& config, const std::string& path) {
  TrainConfig next = config;
  overlay_json_file(next, path);
  next.validate();
  config = next;
}

const std::vector<ConfigField>& config_fields() {
  static const std::vector<ConfigField> list = [] {
    std::vector<ConfigField> out;
    for (const Field& f : fields()) {
      const auto kind = std::visit(
          [](auto member) {
            using T = std::remove_reference_t<decltype(TrainConfig{}.*member)>;
            if constexpr (std::is_same_v<T, int64_t>) return ConfigField::Int;
            else if constexpr (std::is_same_v<T, double>) return ConfigField::Float;
            else if constexpr (std::is_same_v<T, bool>) return ConfigField::Bool;
            else return ConfigField::String;
          },
          f.member);
      out.push_back({f.name, f.help, kind, f.choices, f.testing_only});
    }
    return out;
  }();
  return list;
}

json parse_field_text(const std::string& name, const std::string& text) {
  const Field* f = find_field(name);
  TALLY_CHECK(f, "unknown setting ", name);
  std::string flag = "--" + name;
  std::replace(flag.begin(), flag.end(), '_', '-');
  return std::visit(
      [&](auto member) -> json {
        using T = std::remove_reference_t<decltype(TrainConfig{}.*member)>;
        if constexpr (std::is_same_v<T, std::string>) {
          return text;
        } else if constexpr (std::is_same_v<T, bool>) {
          if (text == "true" || text == "1" || text == "on") return true;
          if (text == "false" || text == "0" || text == "off") return false;
          throw ValueError(flag + ": expected true or false, got \"" + text + "\"");
        } else if constexpr (std::is_same_v<T, int64_t>) {
          int64_t v = 0;
          const auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), v);
          TALLY_CHECK(ec == std::errc() && end == text.data() + text.size(), flag, ": expected an integer, got \"", text, "\"");
          return v;
        } else {
          // As the integers: the whole text, no surrounding spaces and no hexadecimal (stod took
          // " 0.1" and 0x1p-3 but refused "0.1 ").
          double v = 0;
          const auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), v);
          TALLY_CHECK(ec != std::errc::result_out_of_range, flag, ": \"", text, "\" is out of the range of a double");
          // JSON has no nan or inf (they would print as null): no setting takes one.
          TALLY_CHECK(ec == std::errc() && end == text.data() + text.size() && std::isfinite(v), flag, ": expected a finite number, got \"",
                      text, "\"");
          return v;
        }
      },
      f->member);
}

std::vector<std::string> incompatible_fields(const json& checkpoint_config, const TrainConfig& config) {
  std::vector<std::string> out;
  const json now = to_json(config), defaults = to_json(TrainConfig{});
  for (const Field& f : fields()) {
    if (!f.resume_must_match) continue;
    if (!checkpoint_config.contains(f.name)) {
      if (now[f.name] == defaults[f.name]) continue;  // a field newer than the checkpoint: it ran with the default
      out.push_back(std::string(f.name) + ": missing from the checkpoint, config " + now[f.name].dump());
    } else if (checkpoint_config[f.name] != now[f.name]) {
      out.push_back(std::string(f.name) + ": checkpoint " + checkpoint_config[f.name].dump() + ", config " + now[f.name].dump());
    }
  }
  return out;
}

}  // namespace tally::train
