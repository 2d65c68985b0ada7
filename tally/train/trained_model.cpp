#include "tally/train/trained_model.h"

#include "tally/io/safetensors.h"
#include "tally/train/checkpoint.h"
#include "tally/train/export.h"
#include "tally/train/resume.h"

namespace tally::train {

namespace fs = std::filesystem;

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
    // A checkpoint's step (best.safetensors' too) and an export's are in the metadata; a file
    // written elsewhere has none.
    t.step = reader.metadata().contains("tally.step") ? parse_counter(reader.metadata(), "tally.step", checkpoint) : 0;
    t.checkpoint = checkpoint;
  }
  t.model = std::make_shared<nn::TransformerLM>(t.config.model());
  // A checkpoint's "model.*", an export in tally's names or GPT-2's (train/export.h).
  load_weights(*t.model, import_weights(tensors), t.checkpoint.string());
  t.model->eval();
  return t;
}

}  // namespace tally::train
