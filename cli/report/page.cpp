// The report page's layout, header cards and embedded data (page.h); tables.cpp writes the tables,
// assets.cpp holds the CSS and the chart-drawing script.

#include "cli/report/page.h"

#include <fmt/core.h>

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <limits>
#include <system_error>
#include <utility>
#include <vector>

#include "cli/report/format.h"
#include "cli/report/html.h"
#include "cli/report/tables.h"

namespace tally::cli::report {

using json = nlohmann::ordered_json;
using Rows = std::vector<std::pair<std::string, std::string>>;

namespace {

double NaN() { return std::numeric_limits<double>::quiet_NaN(); }

// The charts' ids, titles and what each needs; the script draws into these <svg>s.
struct ChartSlot {
  const char* id;
  const char* title;
};
constexpr ChartSlot kCharts[] = {
    {"chart-loss", "Training loss"},
    {"chart-throughput", "Throughput and MFU"},
    {"chart-modules", "FLOPs and time by module (one profiled step)"},
    {"chart-memory", "Memory by category over one step"},
    {"chart-roofline", "Roofline: every op of one step"},
};

// Metrics plotted beyond this many points are thinned evenly (the last step always kept).
constexpr size_t kMaxPlottedSteps = 2000;

// {"a": {"b": 1}} -> ("a.b", "1"), in the file's key order.
void flatten(const json& j, const std::string& prefix, Rows& out) {
  if (j.is_object() && !j.empty()) {
    for (const auto& [k, v] : j.items()) flatten(v, prefix.empty() ? k : prefix + "." + k, out);
    return;
  }
  const std::string text = j.is_string() ? j.get<std::string>() : j.dump(-1, ' ', false, json::error_handler_t::replace);
  out.emplace_back(prefix, "<code>" + html_escape(text) + "</code>");
}

std::string model_card(const RunDir& run) {
  Rows rows;
  const double params = number_at(run.summary, {"parameters"});
  if (!std::isnan(params)) rows.emplace_back("parameters", fmt::format("{} ({})", number_text(params), si(params, "") + " parameters"));
  Rows config;
  if (!run.config.is_null()) flatten(run.config, "", config);
  constexpr size_t kShown = 12;
  for (size_t i = 0; i < config.size() && i < kShown; ++i) rows.push_back(config[i]);
  std::string out = "<div class=\"card\" id=\"card-model\"><h2>Model and configuration</h2>";
  out += rows.empty() ? missing_block("No configuration recorded (config.json and summary.json are both missing).") : render_kv(rows);
  if (config.size() > kShown) out += fmt::format("<details><summary>Full configuration ({} entries)</summary>{}</details>", config.size(), render_kv(config));
  return out + "</div>";
}

std::string machine_card(const RunDir& run) {
  const json* m = find_path(run.summary, {"machine"});
  std::string out = "<div class=\"card\" id=\"card-machine\"><h2>Machine</h2>";
  if (!m || !m->is_object()) return out + missing_block("Not recorded: summary.json (or its \"machine\") is missing.") + "</div>";
  auto rate = [](double v) { return si(v, "FLOP/s"); };
  const double peak = number_at(*m, {"peak_flops_measured"}), bw = number_at(*m, {"peak_bandwidth_measured"});
  Rows rows{{"CPU", html_escape(text_at(*m, {"cpu"}))},
            {"threads", html_escape(text_at(*m, {"threads"}))},
            {"kernel set", html_escape(text_at(*m, {"kernel_set"}))},
            // The instruction the run's products use (runs before it was recorded: float32 FMA).
            {"peak of", m->contains("peak_instruction") ? html_escape(text_at(*m, {"peak_instruction"})) : "float32 FMA"},
            {"promised peak", value_or_missing(number_at(*m, {"peak_flops_promised"}), rate)},
            {"measured peak", value_or_missing(peak, rate)},
            {"measured bandwidth", value_or_missing(bw, [](double v) { return si(v, "B/s"); })},
            {"ridge point", bw > 0 ? value_or_missing(peak / bw, [](double v) { return number_text(v) + " FLOP/byte"; }) : missing_value()}};
  for (auto& [label, value] : rows)
    if (value.empty()) value = missing_value();
  return out + render_kv(rows) + "</div>";
}

// The run's totals from summary.json, or as far as metrics.jsonl tells them.
std::string run_card(const RunDir& run) {
  std::string out = "<div class=\"card\" id=\"card-run\"><h2>Run</h2>";
  const json* r = find_path(run.summary, {"run"});
  double steps = NaN(), tokens = NaN(), secs = NaN(), tps = NaN(), first = NaN(), last = NaN(), entropy = NaN(), resumed = NaN();
  std::string source;
  if (r && r->is_object()) {
    steps = number_at(*r, {"steps"}), tokens = number_at(*r, {"tokens"}), secs = number_at(*r, {"seconds"});
    tps = number_at(*r, {"tokens_per_s"}), first = number_at(*r, {"first_loss"}), last = number_at(*r, {"final_loss"});
    entropy = number_at(*r, {"unigram_entropy"}), resumed = number_at(*r, {"resumed_from_step"});
  } else if (!run.metrics.empty()) {
    source = "<p class=\"note\">From metrics.jsonl (no summary.json).</p>";
    const json &a = run.metrics.front(), &b = run.metrics.back();
    steps = number_at(b, {"step"}), tokens = number_at(b, {"tokens"}), secs = number_at(b, {"elapsed_s"});
    tps = secs > 0 ? tokens / secs : NaN(), first = number_at(a, {"loss"}), last = number_at(b, {"loss"});
  } else {
    return out + missing_block("No steps recorded: summary.json is missing and metrics.jsonl is empty or missing.") + "</div>";
  }
  auto loss = [](double v) { return fmt::format("{:.3f} nats/token", v); };
  Rows rows{{"steps", value_or_missing(steps, [](double v) { return number_text(v); })},
            {"tokens", value_or_missing(tokens, [](double v) { return fmt::format("{} ({})", number_text(v), si(v, "") + " tokens"); })},
            {"time", value_or_missing(secs, seconds_text)},
            {"throughput", value_or_missing(tps, [](double v) { return si(v, "") + " tokens/s"; })},
            {"first loss", value_or_missing(first, loss)},
            {"final loss", value_or_missing(last, loss)}};
  if (!std::isnan(entropy)) {
    rows.emplace_back("unigram entropy of the corpus", loss(entropy));
    if (!std::isnan(last))
      rows.emplace_back("final loss vs unigram entropy",
                        fmt::format("{:.3f} nats {} ({:.0f}% of it)", std::fabs(entropy - last),
                                    last < entropy ? "below: the model uses context" : "above: not yet better than token counts",
                                    100 * last / entropy));
  }
  if (const double v = number_at(run.summary, {"validation", "last_loss"}); !std::isnan(v)) {
    const std::string data = find_path(run.summary, {"validation", "data"}) ? run.summary["validation"]["data"].get<std::string>() : "";
    rows.emplace_back("final validation loss", loss(v) + " (" + html_escape(data) + ")");
    rows.emplace_back("best validation loss", fmt::format("{} at step {}", loss(number_at(run.summary, {"validation", "best_loss"})),
                                                          number_text(number_at(run.summary, {"validation", "best_step"}))));
  }
  if (resumed > 0) rows.emplace_back("resumed from step", number_text(resumed));
  return out + render_kv(rows) + source + "</div>";
}

json column(const std::vector<const json*>& rows, const char* key) {
  json out = json::array();
  for (const json* r : rows) {
    const double v = number_at(*r, {key});
    out.push_back(std::isfinite(v) ? json(v) : json(nullptr));
  }
  return out;
}

// What the chart script reads: metrics as columns, the summary's per-op and per-module lists.
json chart_data(const RunDir& run) {
  std::vector<const json*> kept;
  const size_t n = run.metrics.size();
  const size_t stride = n > kMaxPlottedSteps ? (n + kMaxPlottedSteps - 1) / kMaxPlottedSteps : 1;
  for (size_t i = 0; i < n; ++i)
    if (i % stride == 0 || i + 1 == n) kept.push_back(&run.metrics[i]);
  std::vector<double> resumes;  // steps after which elapsed_s started again: resumptions
  for (size_t i = 1; i < n; ++i)
    if (number_at(run.metrics[i], {"elapsed_s"}) < number_at(run.metrics[i - 1], {"elapsed_s"}))
      resumes.push_back(number_at(run.metrics[i - 1], {"step"}));
  if (double r = number_at(run.summary, {"run", "resumed_from_step"}); r > 0 && std::find(resumes.begin(), resumes.end(), r) == resumes.end())
    resumes.push_back(r);
  json d;
  d["has_summary"] = !run.summary.is_null();
  d["metrics"] = {{"step", column(kept, "step")}, {"loss", column(kept, "loss")},
                  {"tokens_per_s", column(kept, "tokens_per_s")}, {"mfu", column(kept, "mfu")}};
  std::vector<const json*> evaluated;  // every step with a validation loss: few, none thinned out
  for (const json& m : run.metrics)
    if (m.contains("val_loss")) evaluated.push_back(&m);
  d["validation"] = {{"step", column(evaluated, "step")}, {"val_loss", column(evaluated, "val_loss")}};
  d["resumes"] = resumes;
  const double entropy = number_at(run.summary, {"run", "unigram_entropy"});
  d["unigram_entropy"] = std::isfinite(entropy) ? json(entropy) : json(nullptr);
  for (const char* key : {"machine", "ops", "modules", "memory_timeline"}) {
    const json* v = find_path(run.summary, {key});
    d[key] = v ? *v : json(nullptr);
  }
  return d;
}

}  // namespace

std::string render_page(const RunDir& run, std::string_view tally_version) {
  // The directory's own name ("runs/tiny/" and "." name it too), never the whole path.
  std::error_code ec;
  std::filesystem::path full = std::filesystem::weakly_canonical(std::filesystem::absolute(run.dir, ec), ec);
  if (ec) full = run.dir;
  const std::string name = html_escape((full.filename().empty() ? full.parent_path() : full).filename().string());
  std::string out = "<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">"
                    "<meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">"
                    // The browser itself holds the page to "self-contained": nothing may be fetched.
                    "<meta http-equiv=\"Content-Security-Policy\" content=\"default-src 'none'; "
                    "style-src 'unsafe-inline'; script-src 'unsafe-inline'; img-src data:\">";
  out += "<title>tally report: " + name + "</title>";
  out += std::string("<script>") + kErrorHookJs + "</script><style>" + kPageCss + "</style></head><body>\n";
  out += "<div id=\"js-errors\" hidden></div>";
  out += "<header><h1>tally report <span class=\"run-name\">" + name + "</span></h1></header>\n";
  if (!run.notes.empty()) {
    out += "<section id=\"notes\"><ul>";
    for (const auto& note : run.notes) out += "<li>" + html_escape(note) + "</li>";
    out += "</ul></section>\n";
  }
  out += "<section class=\"cards\">" + model_card(run) + machine_card(run) + run_card(run) + "</section>\n";
  out += "<section id=\"charts\">";
  for (const auto& c : kCharts)
    out += fmt::format("<figure><svg id=\"{0}\" role=\"img\" aria-label=\"{1}\" xmlns=\"http://www.w3.org/2000/svg\"><title>{1}</title></svg></figure>",
                       c.id, c.title);
  out += time_split_section(run) + "</section>\n" + tables_section(run) + "\n";
  out += fmt::format("<footer>Written by <code>tally report</code> (tally {}) from {}: config.json, metrics.jsonl, summary.json. "
                     "Units: FLOP counts with SI prefixes (1 GFLOP = 10<sup>9</sup>), bytes with binary prefixes (1 MiB = 2<sup>20</sup> B).</footer>\n",
                     html_escape(tally_version), name);
  out += "<div id=\"report-status\" data-status=\"pending\"></div>\n";
  out += "<script type=\"application/json\" id=\"report-data\">" + json_for_script(chart_data(run)) + "</script>\n";
  out += std::string("<script>") + kChartsJs + "</script>\n</body></html>\n";
  return out;
}

}  // namespace tally::cli::report
