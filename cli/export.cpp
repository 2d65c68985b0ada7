// `tally export RUN_DIR --out FILE`: a trained run's weights alone (no optimizer state), in tally's
// names or Hugging Face GPT-2's (Note [GPT-2's layout] in tally/train/export.h).

#include <fmt/core.h>

#include <filesystem>
#include <memory>
#include <nlohmann/json.hpp>

#include "cli/commands.h"
#include "cli/report/format.h"
#include "tally/io/safetensors.h"
#include "tally/train/export.h"
#include "tally/train/trained_model.h"

namespace tally::cli {

namespace {

struct ExportArgs {
  std::string run_dir, out, checkpoint, names = "tally";
  bool force = false;
};

}  // namespace

void refuse_existing_output(const std::string& path, std::string_view command, std::string_view hint) {
  std::error_code ec;
  TALLY_CHECK_TYPE(IOError, !std::filesystem::exists(std::filesystem::symlink_status(path, ec)), path, " exists: tally ", command,
                   " writes over no file (", hint, ")");
}

namespace {

void run_export(const ExportArgs& a) {
  const train::WeightNames names = train::weight_names_from(a.names);
  if (!a.force) refuse_existing_output(a.out, "export", "--force to replace it");
  std::vector<std::string> notes;
  const train::TrainedModel trained = train::load_trained_model(a.run_dir, a.checkpoint, notes);
  for (const std::string& n : notes) fmt::print(stderr, "tally export: {}\n", n);
  const StateDict weights = train::export_weights(*trained.model, names);
  const nlohmann::json model = train::to_json(trained.config);
  // "format": "pt" is what Hugging Face's loaders look for in a safetensors file's metadata.
  const std::map<std::string, std::string> metadata = {{"format", "pt"},
                                                       {"tally.format", "tally-weights-1"},
                                                       {"tally.names", a.names},
                                                       {"tally.step", std::to_string(trained.step)},
                                                       {"tally.config", model.dump()}};
  io::save_safetensors(a.out, weights, metadata);
  int64_t bytes = 0;
  for (const auto& [name, t] : weights) bytes += t.nbytes();
  fmt::print("wrote {}: {} tensors, {} of float32 weights ({} names) from step {} ({})\n", a.out, weights.size(), report::bytes_text(static_cast<double>(bytes)),
             a.names, trained.step, trained.checkpoint.string());
}

}  // namespace

void add_export_command(CLI::App& app) {
  auto* cmd = app.add_subcommand("export", "Write a trained run's weights (no optimizer state) to one .safetensors file");
  auto a = std::make_shared<ExportArgs>();
  cmd->add_option("run_dir", a->run_dir, "a run directory `tally train` wrote")->required();
  cmd->add_option("--out", a->out, "the .safetensors file to write")->required();
  cmd->add_option("--checkpoint", a->checkpoint, "a checkpoint file (default: the run's newest that verifies)");
  cmd->add_option("--names", a->names, "tally (the model's own names) or hf-gpt2 (Hugging Face GPT-2's names and Conv1D layouts)")
      ->capture_default_str()
      ->check(CLI::IsMember({"tally", "hf-gpt2"}));
  cmd->add_flag("--force", a->force, "replace --out if it exists");
  cmd->callback([a] { run_export(*a); });
}

}  // namespace tally::cli
