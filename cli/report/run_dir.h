#pragma once
// Reading a training run's directory (docs/run_dir.md) for the report: every file is optional, so
// that a run still going, killed, or resumed gives a page; what is missing becomes a note. JSON is
// kept in file order (ordered_json) so the page lists a config as the trainer wrote it.

#include <filesystem>
#include <nlohmann/json.hpp>
#include <string>
#include <utility>
#include <vector>

namespace tally::cli::report {

/// What `tally report` read from RUN_DIR.
struct RunDir {
  std::filesystem::path dir;               ///< RUN_DIR as given
  nlohmann::ordered_json config;                ///< config.json, or summary.json's "config"; null when neither
  nlohmann::ordered_json summary;               ///< summary.json; null when absent
  std::vector<nlohmann::ordered_json> metrics;  ///< metrics.jsonl's objects, in file order
  std::vector<std::string> notes;               ///< what was absent or skipped, for the page to say
};

/// Reads RUN_DIR. Raises IOError naming the file when RUN_DIR is missing, holds none of the three
/// files, or a file is not valid JSON (a last metrics line cut short by a killed run is skipped
/// with a note instead).
RunDir load_run_dir(const std::filesystem::path& dir);

/// A run's totals: from summary.json, or as far as metrics.jsonl tells them when the run has none
/// (a run still going, or killed). NaN for what neither records.
struct RunTotals {
  bool from_metrics = false;  ///< no summary.json: these come from metrics.jsonl
  double steps, tokens, seconds, tokens_per_s, first_loss, final_loss, unigram_entropy, resumed_from;
  double mfu;                                  ///< against the promised peak (summary.json's mfu.promised)
  double final_val_loss, best_val_loss, best_val_step;
};
/// `run`'s totals; every field NaN when it recorded no step.
RunTotals run_totals(const RunDir& run);
/// RUN_DIR's own name for titles ("runs/tiny/" and "." name it too), never the whole path.
std::string run_name(const RunDir& run);

/// `{"a": {"b": 1}}` as ("a.b", "1"): the leaves in file order, strings as they are and other
/// values as JSON text (a list is one leaf).
std::vector<std::pair<std::string, std::string>> flatten(const nlohmann::ordered_json& j);

/// The value at `path` under `j` (objects only), or nullptr when a key is missing.
const nlohmann::ordered_json* find_path(const nlohmann::ordered_json& j, std::initializer_list<const char*> path);
/// The number at `path`, or NaN when missing or not a number.
double number_at(const nlohmann::ordered_json& j, std::initializer_list<const char*> path);
/// The string at `path` (numbers and booleans as JSON text), or "" when missing.
std::string text_at(const nlohmann::ordered_json& j, std::initializer_list<const char*> path);

}  // namespace tally::cli::report
