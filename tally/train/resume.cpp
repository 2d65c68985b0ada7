#include "tally/train/resume.h"

#include <charconv>
#include <map>

#include "tally/error/error.h"

namespace tally::train {

namespace fs = std::filesystem;
using nlohmann::json;

/// A counter of the checkpoint's metadata, as save() writes it: decimal digits, nothing else, not
/// negative. A value that is not (an edited or damaged file) is refused rather than trusted: a
/// step of -5 or 0 would make the resumed run truncate metrics.jsonl to it and save over the
/// run's checkpoints.
int64_t parse_counter(const std::map<std::string, std::string>& m, const std::string& key, const fs::path& path) {
  const auto it = m.find(key);
  TALLY_CHECK(it != m.end(), "checkpoint ", path.string(), " has no '", key, "' in its metadata");
  const std::string& text = it->second;
  int64_t value = -1;
  const auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), value);
  TALLY_CHECK(!text.empty() && text[0] != '-' && ec == std::errc() && end == text.data() + text.size(), "checkpoint ",
              path.string(), ": metadata '", key, "' is '", text, "', not a non-negative integer (the file was altered or damaged)");
  return value;
}


GeneratorState generator_from(const json& j) { return {j.at("seed").get<uint64_t>(), j.at("offset").get<uint64_t>()}; }
json generator_json(const GeneratorState& s) { return {{"seed", s.seed}, {"offset", s.offset}}; }

ResumePoint read_resume_point(const CheckpointManager& checkpoints, const fs::path& out, const TrainConfig& config,
                              const std::function<void(const std::string&)>& note) {
  std::vector<std::string> notes;
  std::optional<Checkpoint> c = checkpoints.load_latest(notes);
  if (!c) {
    std::error_code ec;
    const std::string why = !fs::is_directory(out, ec)                ? "no such run directory"
                            : !fs::is_directory(checkpoints.dir(), ec) ? "it has no checkpoints folder"
                                                                       : checkpoints.dir().string() + " holds no checkpoint";
    if (notes.empty()) throw ValueError("cannot resume " + out.string() + ": " + why);
    std::string lines;
    for (const auto& n : notes) lines += "\n  " + n;
    throw ValueError("cannot resume " + out.string() + ": none of its checkpoints reads back whole and verifies (nothing was written):" + lines);
  }
  for (const auto& n : notes) note(n);
  const auto& m = c->metadata;
  TALLY_CHECK(m.contains(kFormatKey) && (m.at(kFormatKey) == kFormat || m.at(kFormatKey) == kFormatBeforeChecksums), "checkpoint ",
              c->path.string(), " is not a tally training checkpoint (metadata ", kFormatKey, " is neither ", kFormat, " nor ",
              kFormatBeforeChecksums, ")");
  ResumePoint r;
  json saved_config;
  auto json_of = [&](const std::string& key) {
    TALLY_CHECK(m.contains(key), "checkpoint ", c->path.string(), " has no '", key, "' in its metadata");
    try {
      return json::parse(m.at(key));
    } catch (const json::exception& e) {
      throw ValueError("checkpoint " + c->path.string() + " has unreadable metadata '" + key + "': " + e.what());
    }
  };
  saved_config = json_of("tally.config");
  r.position = json_of("tally.data_position");
  r.generators = json_of("tally.generators");
  const std::vector<std::string> mismatched = incompatible_fields(saved_config, config);
  if (!mismatched.empty()) {
    std::string lines;
    for (const auto& f : mismatched) lines += "\n  " + f;
    throw ValueError("checkpoint " + c->path.string() + " was trained with another configuration:" + lines);
  }
  r.step = parse_counter(m, "tally.step", c->path);
  r.tokens = parse_counter(m, "tally.tokens", c->path);
  TALLY_CHECK(r.step == c->step, "checkpoint ", c->path.string(), " is step ", c->step, "'s by its name but its metadata says step ",
              r.step, " (the file was altered or renamed): nothing was written; move it out of ", checkpoints.dir().string(),
              " to resume from the one before");
  r.checkpoint = std::move(*c);
  return r;
}

void check_checkpoint_whole(const Checkpoint& c, const nn::Module& model) {
  const std::string file = c.path.string();
  for (const auto& [key, t] : c.tensors) {
    const bool known = key.starts_with("model.") || key.starts_with("optimizer.") || key.starts_with("scheduler.") || key.starts_with("precision.");
    TALLY_CHECK(known, "checkpoint ", file, " holds '", key, "', which is part of no run state (model., optimizer., scheduler. or precision.)");
  }
  for (const auto& [name, t] : model.state_dict()) {
    const Tensor* saved = c.tensors.find("model." + name);
    TALLY_CHECK_TYPE_ERROR(!saved || saved->dtype() == t.dtype(), "checkpoint ", file, ": 'model.", name, "' has dtype ",
                           dtype_name(saved ? saved->dtype() : t.dtype()), " where the model's is ", dtype_name(t.dtype()),
                           ": resuming would convert it");
  }
  // Every parameter has a gradient in every step, so each has optimizer state or none has (fp16
  // steps all skipped so far).
  const auto params = static_cast<int64_t>(model.parameters().size());
  int64_t with_state = 0, missing = -1;
  for (int64_t i = 0; i < params; ++i) {
    if (c.tensors.contains("optimizer.state." + std::to_string(i) + ".step")) ++with_state;
    else if (missing < 0) missing = i;
  }
  TALLY_CHECK(with_state == 0 || with_state == params, "checkpoint ", file, " holds the optimizer state of ", with_state, " of its ",
              params, " parameters (parameter ", missing, "'s is missing): resuming would restart the missing ones");
}

}  // namespace tally::train
