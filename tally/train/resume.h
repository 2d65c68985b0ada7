#pragma once
// Reading a run's state back for `tally train --resume` (Note [Bit-exact resume] in trainer.cpp):
// the newest checkpoint that verifies, checked against the config and the run it resumes.

#include <filesystem>
#include <functional>
#include <map>
#include <nlohmann/json.hpp>
#include <string>

#include "tally/core/generator.h"
#include "tally/nn/module.h"
#include "tally/train/checkpoint.h"
#include "tally/train/config.h"

namespace tally::train {

/// A checkpoint to resume from, read whole and checked against the config (Note [Bit-exact resume]).
struct ResumePoint {
  Checkpoint checkpoint;
  int64_t step = 0;
  int64_t tokens = 0;
  nlohmann::json position;    ///< the loader's state
  nlohmann::json generators;  ///< the default and the model's generators
};

/// The newest checkpoint of the run in `out` that reads and verifies. ValueError when there is none (naming the
/// directory, and why each checkpoint there did not load), when it is not a tally training
/// checkpoint, or when it was trained with another configuration.
ResumePoint read_resume_point(const CheckpointManager& checkpoints, const std::filesystem::path& out, const TrainConfig& config,
                              const std::function<void(const std::string&)>& note);

/// What Module::load_state_dict and Optimizer::load_state_dict take, as torch's do, a resume
/// refuses: tally train writes every part of a run's state itself, so a key of no part, a model
/// tensor of another dtype (which the model would convert) or some of the model's parameters'
/// optimizer state missing (which the optimizer would restart) mean the file is not this run's
/// checkpoint as it was written, and the run would not continue bit-exactly (Note [Bit-exact resume]).
void check_checkpoint_whole(const Checkpoint& c, const nn::Module& model);

/// A counter of a checkpoint's metadata (tally.step, tally.tokens), as save() writes it: ValueError
/// naming the file when it is missing or not a non-negative integer.
int64_t parse_counter(const std::map<std::string, std::string>& m, const std::string& key, const std::filesystem::path& path);

/// A generator's state as a checkpoint's metadata holds it, {"seed", "offset"}, and back.
GeneratorState generator_from(const nlohmann::json& j);
nlohmann::json generator_json(const GeneratorState& s);

}  // namespace tally::train
