// The comparison page's sections (compare.h).

#include "cli/report/compare.h"

#include <fmt/core.h>

#include <algorithm>
#include <cmath>
#include <map>
#include <set>

#include "cli/report/format.h"
#include "cli/report/html.h"

namespace tally::cli::report {

using json = nlohmann::ordered_json;

namespace {

std::string totals_table(const std::vector<RunDir>& runs, const std::vector<std::string>& labels) {
  Table t{{"run", "steps", "tokens", "time", "tokens/s", "MFU", "final loss", "final validation loss", "best validation loss", "parameters",
           "CPU"},
          {}};
  auto loss = [](double v) { return fmt::format("{:.3f}", v); };
  for (size_t i = 0; i < runs.size(); ++i) {
    const RunTotals r = run_totals(runs[i]);
    const double params = number_at(runs[i].summary, {"parameters"});
    const std::string cpu = text_at(runs[i].summary, {"machine", "cpu"});
    t.rows.push_back({"<code>" + html_escape(labels[i]) + "</code>" + (r.from_metrics ? " <span class=\"note\">(no summary.json)</span>" : ""),
                      value_or_missing(r.steps, [](double v) { return number_text(v); }),
                      value_or_missing(r.tokens, [](double v) { return si(v, ""); }), value_or_missing(r.seconds, seconds_text),
                      value_or_missing(r.tokens_per_s, [](double v) { return si(v, ""); }), value_or_missing(r.mfu, percent_text),
                      value_or_missing(r.final_loss, loss), value_or_missing(r.final_val_loss, loss),
                      value_or_missing(r.best_val_loss, [&](double v) { return fmt::format("{} (step {})", loss(v), number_text(r.best_val_step)); }),
                      value_or_missing(params, [](double v) { return si(v, ""); }), cpu.empty() ? missing_value() : html_escape(cpu)});
  }
  return render_table(t, "numbers");
}

// The settings that are not the same in every run (one missing from a run counts as different).
std::string config_differences(const std::vector<RunDir>& runs, const std::vector<std::string>& labels) {
  std::vector<std::map<std::string, std::string>> flat(runs.size());
  std::set<std::string> keys;
  for (size_t i = 0; i < runs.size(); ++i) {
    for (auto& [key, text] : flatten(runs[i].config)) {
      keys.insert(key);
      flat[i].emplace(key, std::move(text));
    }
  }
  Table t{{"setting"}, {}};
  for (const auto& label : labels) t.head.push_back("<code>" + html_escape(label) + "</code>");
  size_t same = 0;
  for (const auto& key : keys) {
    const auto first = flat[0].find(key);
    const bool differs = std::any_of(flat.begin(), flat.end(), [&](const auto& f) {
      const auto it = f.find(key);
      return it == f.end() || first == flat[0].end() || it->second != first->second;
    });
    if (!differs) {
      ++same;
      continue;
    }
    std::vector<std::string> row{"<code>" + html_escape(key) + "</code>"};
    for (const auto& f : flat) {
      const auto it = f.find(key);
      row.push_back(it == f.end() ? missing_value() : "<code>" + html_escape(it->second) + "</code>");
    }
    t.rows.push_back(std::move(row));
  }
  std::string out = "<h2>Settings that differ</h2>";
  out += t.rows.empty() ? "<p class=\"note\">None: the runs' configurations are the same.</p>" : render_table(t, "compare-config");
  return out + fmt::format("<p class=\"note\">{} other settings are the same in every run.</p>", same);
}

}  // namespace

std::vector<std::string> run_labels(const std::vector<RunDir>& runs) {
  std::vector<std::string> names;
  for (const auto& r : runs) names.push_back(run_name(r));
  const bool clash = std::set<std::string>(names.begin(), names.end()).size() != names.size();
  if (clash)
    for (size_t i = 0; i < runs.size(); ++i) names[i] = runs[i].dir.string();
  return names;
}

std::string comparison_section(const std::vector<RunDir>& runs, const std::vector<std::string>& labels) {
  return "<section id=\"comparison\"><h2>Runs</h2>" + totals_table(runs, labels) + config_differences(runs, labels) + "</section>\n";
}

}  // namespace tally::cli::report
