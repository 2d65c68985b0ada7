#include "tally/train/trained_model.h"

#include "tally/io/safetensors.h"
#include "tally/train/checkpoint.h"

namespace tally::train {

namespace fs = std::filesystem;

namespace {

/// The step a checkpoint file names ("step-000000100.safetensors"), or 0.
int64_t step_of(const fs::path& path) {
  const std::string stem = path.stem().string();
  try {
    return stem.starts_with("step-") ? std::stoll(stem.substr(5)) : 0;
  } catch (const std::exception&) {
    return 0;
  }
}

}  // namespace

TrainedModel load_trained_model(const fs::path& run_dir, const std::string& checkpoint, std::vector<std::string>& notes) {
  const fs::path config_path = run_dir / "config.json";
  TALLY_CHECK_TYPE(IOError, fs::is_regular_file(config_path), "run directory ", run_dir.string(),
                   " has no config.json: is it a directory `tally train --out` wrote?");
  TrainedModel t;
  apply_json_file(t.config, config_path.string());
  StateDict tensors;
  if (checkpoint.empty()) {
    const CheckpointManager checkpoints(run_dir / "checkpoints", t.config.keep);
    std::optional<Checkpoint> c = checkpoints.load_latest(notes);
    TALLY_CHECK_TYPE(IOError, c.has_value(), "run directory ", run_dir.string(), " has no checkpoint that loads",
                     checkpoints.list().empty() ? " (none was written yet)" : "");
    t.step = c->step;
    t.checkpoint = c->path;
    tensors = std::move(c->tensors);
  } else {
    const io::SafetensorsReader reader = io::SafetensorsReader::open(checkpoint);
    tensors = reader.load_all();
    t.step = step_of(checkpoint);
    t.checkpoint = checkpoint;
  }
  t.model = std::make_shared<nn::TransformerLM>(t.config.model());
  // Checkpoints hold the model under "model." beside the optimizer's state.
  t.model->load_state_dict(with_prefix_removed(tensors, "model."));
  t.model->eval();
  return t;
}

}  // namespace tally::train
