// Reading RUN_DIR (run_dir.h).

#include "cli/report/run_dir.h"

#include <cmath>
#include <fstream>
#include <limits>
#include <sstream>
#include <system_error>

#include "tally/error/error.h"

namespace tally::cli::report {

namespace fs = std::filesystem;
using json = nlohmann::ordered_json;

namespace {

std::string read_file(const fs::path& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) throw IOError("cannot open " + path.string());
  std::ostringstream os;
  os << in.rdbuf();
  return os.str();
}

// A one-line reason: nlohmann's message without its "[json.exception...] " tag.
std::string parse_reason(const json::parse_error& e) {
  std::string what = e.what();
  if (auto pos = what.find("] "); pos != std::string::npos) what = what.substr(pos + 2);
  return what;
}

json read_json_object(const fs::path& path) {
  json j;
  try {
    j = json::parse(read_file(path));
  } catch (const json::parse_error& e) {
    throw IOError(path.string() + ": not valid JSON: " + parse_reason(e));
  }
  if (!j.is_object()) throw IOError(path.string() + ": expected a JSON object, got " + std::string(j.type_name()));
  return j;
}

void read_metrics(const fs::path& path, RunDir& run) {
  const std::string text = read_file(path);
  size_t line_no = 0;
  for (size_t start = 0; start < text.size();) {
    size_t end = text.find('\n', start);
    const bool last = end == std::string::npos;
    if (last) end = text.size();
    const std::string line = text.substr(start, end - start);
    start = end + 1;
    ++line_no;
    if (line.find_first_not_of(" \t\r") == std::string::npos) continue;
    try {
      json j = json::parse(line);
      if (!j.is_object()) throw IOError(path.string() + ":" + std::to_string(line_no) + ": expected a JSON object");
      run.metrics.push_back(std::move(j));
    } catch (const json::parse_error& e) {
      // A killed run can leave its last line half written, without the newline that ends it.
      if (last) {
        run.notes.push_back("metrics.jsonl: skipped line " + std::to_string(line_no) +
                            ", cut short (the run was probably stopped while writing it)");
        continue;
      }
      throw IOError(path.string() + ":" + std::to_string(line_no) + ": not valid JSON: " + parse_reason(e));
    }
  }
}

}  // namespace

RunDir load_run_dir(const fs::path& dir) {
  std::error_code ec;
  if (dir.empty()) throw IOError("no run directory given (the path is empty): name a run directory, such as runs/mine");
  if (fs::exists(dir, ec) && !fs::is_directory(dir, ec))
    throw IOError(dir.string() + ": not a directory: a run directory holds config.json, metrics.jsonl and summary.json (docs/run_dir.md)");
  if (!fs::is_directory(dir, ec)) throw IOError(dir.string() + ": no such run directory");
  RunDir run;
  run.dir = dir;
  const fs::path config = dir / "config.json", metrics = dir / "metrics.jsonl", summary = dir / "summary.json";
  const bool has_config = fs::exists(config, ec), has_metrics = fs::exists(metrics, ec),
             has_summary = fs::exists(summary, ec);
  if (!has_config && !has_metrics && !has_summary)
    throw IOError(dir.string() + ": not a run directory (none of config.json, metrics.jsonl, summary.json)");

  if (has_summary) run.summary = read_json_object(summary);
  else run.notes.push_back("no summary.json: the run has not finished, or was stopped; the end-of-run accounting is missing");
  if (has_config) run.config = read_json_object(config);
  else if (const json* c = find_path(run.summary, {"config"}); c && c->is_object()) run.config = *c;
  else run.notes.push_back("no config.json: the configuration is unknown");
  if (has_metrics) read_metrics(metrics, run);
  else run.notes.push_back("no metrics.jsonl: no per-step metrics");
  if (has_metrics && run.metrics.empty()) run.notes.push_back("metrics.jsonl is empty: no step has finished yet");
  return run;
}

RunTotals run_totals(const RunDir& run) {
  const double nan = std::numeric_limits<double>::quiet_NaN();
  RunTotals t{false, nan, nan, nan, nan, nan, nan, nan, nan, nan, nan, nan, nan};
  if (const json* r = find_path(run.summary, {"run"}); r && r->is_object()) {
    t.steps = number_at(*r, {"steps"}), t.tokens = number_at(*r, {"tokens"}), t.seconds = number_at(*r, {"seconds"});
    t.tokens_per_s = number_at(*r, {"tokens_per_s"}), t.first_loss = number_at(*r, {"first_loss"});
    t.final_loss = number_at(*r, {"final_loss"}), t.unigram_entropy = number_at(*r, {"unigram_entropy"});
    t.resumed_from = number_at(*r, {"resumed_from_step"});
    t.mfu = number_at(run.summary, {"mfu", "promised"});
  } else if (!run.metrics.empty()) {
    const json &a = run.metrics.front(), &b = run.metrics.back();
    t.from_metrics = true;
    t.steps = number_at(b, {"step"}), t.tokens = number_at(b, {"tokens"}), t.seconds = number_at(b, {"elapsed_s"});
    t.tokens_per_s = t.seconds > 0 ? t.tokens / t.seconds : nan, t.first_loss = number_at(a, {"loss"});
    t.final_loss = number_at(b, {"loss"});
  }
  if (const json* v = find_path(run.summary, {"validation"}); v && v->is_object()) {
    t.final_val_loss = number_at(*v, {"last_loss"}), t.best_val_loss = number_at(*v, {"best_loss"});
    t.best_val_step = number_at(*v, {"best_step"});
  } else {
    for (const json& m : run.metrics) {
      const double v = number_at(m, {"val_loss"});
      if (std::isnan(v)) continue;
      t.final_val_loss = v;
      if (!(v >= t.best_val_loss)) t.best_val_loss = v, t.best_val_step = number_at(m, {"step"});
    }
  }
  return t;
}

std::string run_name(const RunDir& run) {
  std::error_code ec;
  fs::path full = fs::weakly_canonical(fs::absolute(run.dir, ec), ec);
  if (ec) full = run.dir;
  return (full.filename().empty() ? full.parent_path() : full).filename().string();
}

namespace {
void flatten_into(const json& j, const std::string& prefix, std::vector<std::pair<std::string, std::string>>& out) {
  if (j.is_object() && !j.empty()) {
    for (const auto& [k, v] : j.items()) flatten_into(v, prefix.empty() ? k : prefix + "." + k, out);
    return;
  }
  out.emplace_back(prefix, j.is_string() ? j.get<std::string>() : j.dump(-1, ' ', false, json::error_handler_t::replace));
}
}  // namespace

std::vector<std::pair<std::string, std::string>> flatten(const json& j) {
  std::vector<std::pair<std::string, std::string>> out;
  if (!j.is_null()) flatten_into(j, "", out);
  return out;
}

const json* find_path(const json& j, std::initializer_list<const char*> path) {
  const json* at = &j;
  for (const char* key : path) {
    if (!at->is_object()) return nullptr;
    auto it = at->find(key);
    if (it == at->end()) return nullptr;
    at = &*it;
  }
  return at;
}

double number_at(const json& j, std::initializer_list<const char*> path) {
  const json* v = find_path(j, path);
  return v && v->is_number() ? v->get<double>() : std::numeric_limits<double>::quiet_NaN();
}

std::string text_at(const json& j, std::initializer_list<const char*> path) {
  const json* v = find_path(j, path);
  if (!v || v->is_null()) return "";
  return v->is_string() ? v->get<std::string>() : v->dump(-1, ' ', false, json::error_handler_t::replace);
}

}  // namespace tally::cli::report
