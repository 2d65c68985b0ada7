#pragma once
// A finished (or running) training run's model, read back from its run directory: the config it
// was trained with (config.json) and the weights of a checkpoint. What `tally sample` decodes
// with and `tally export` writes out.

#include <cstdint>
#include <filesystem>
#include <memory>
#include <string>
#include <vector>

#include "tally/nn/transformer.h"
#include "tally/train/config.h"

namespace tally::train {

struct TrainedModel {
  TrainConfig config;
  std::shared_ptr<nn::TransformerLM> model;  ///< float32, on the CPU, in eval mode
  int64_t step = 0;                          ///< the checkpoint's step
  std::filesystem::path checkpoint;
};

/// The model of `run_dir` at `checkpoint` (a checkpoint, or an export in tally's or GPT-2's names;
/// verified against its checksums where it has them), or at the
/// run's newest checkpoint that verifies when `checkpoint` is empty; each newer one skipped gets a
/// line in `notes`. IOError naming the run directory when it has no config.json or no checkpoint
/// that loads; ValueError naming the tensors when the weights do not fit the config's model.
TrainedModel load_trained_model(const std::filesystem::path& run_dir, const std::string& checkpoint, std::vector<std::string>& notes);

}  // namespace tally::train
