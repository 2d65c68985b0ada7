// The report page's layout, header cards and embedded data (page.h); tables.cpp writes the tables,
// assets.cpp holds the CSS, charts.js draws the charts.

#include "cli/report/page.h"

#include <fmt/core.h>

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <limits>
#include <system_error>
#include <utility>
#include <vector>

#include "cli/report/compare.h"
#include "cli/report/format.h"
#include "cli/report/html.h"
#include "cli/report/tables.h"

namespace tally::cli::report {

using json = nlohmann::ordered_json;
using Rows = std::vector<std::pair<std::string, std::string>>;

namespace {

// Metrics plotted beyond this many points are thinned evenly (the last step always kept).
constexpr size_t kMaxPlottedSteps = 2000;

std::string model_card(const RunDir& run) {
  Rows rows;
  const double params = number_at(run.summary, {"parameters"});
  if (!std::isnan(params)) rows.emplace_back("parameters", fmt::format("{} ({})", number_text(params), si(params, "") + " parameters"));
  Rows config;
  for (const auto& [key, text] : flatten(run.config)) config.emplace_back(key, "<code>" + html_escape(text) + "</code>");
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

// The run's totals (run_totals: summary.json, or metrics.jsonl as far as it goes).
std::string run_card(const RunDir& run) {
  std::string out = "<div class=\"card\" id=\"card-run\"><h2>Run</h2>";
  const RunTotals t = run_totals(run);
  if (std::isnan(t.steps) && run.summary.is_null())
    return out + missing_block("No steps recorded: summary.json is missing and metrics.jsonl is empty or missing.") + "</div>";
  auto loss = [](double v) { return fmt::format("{:.3f} nats/token", v); };
  Rows rows{{"steps", value_or_missing(t.steps, [](double v) { return number_text(v); })},
            {"tokens", value_or_missing(t.tokens, [](double v) { return fmt::format("{} ({})", number_text(v), si(v, "") + " tokens"); })},
            {"time", value_or_missing(t.seconds, seconds_text)},
            {"throughput", value_or_missing(t.tokens_per_s, [](double v) { return si(v, "") + " tokens/s"; })},
            {"first loss", value_or_missing(t.first_loss, loss)},
            {"final loss", value_or_missing(t.final_loss, loss)}};
  if (!std::isnan(t.unigram_entropy)) {
    rows.emplace_back("unigram entropy of the corpus", loss(t.unigram_entropy));
    if (!std::isnan(t.final_loss))
      rows.emplace_back("final loss vs unigram entropy",
                        fmt::format("{:.3f} nats {} ({:.0f}% of it)", std::fabs(t.unigram_entropy - t.final_loss),
                                    t.final_loss < t.unigram_entropy ? "below: the model uses context" : "above: not yet better than token counts",
                                    100 * t.final_loss / t.unigram_entropy));
  }
  if (!std::isnan(t.final_val_loss)) {
    const std::string data = text_at(run.summary, {"validation", "data"});
    rows.emplace_back("final validation loss", loss(t.final_val_loss) + (data.empty() ? "" : " (" + html_escape(data) + ")"));
    rows.emplace_back("best validation loss", fmt::format("{} at step {}", loss(t.best_val_loss), number_text(t.best_val_step)));
  }
  if (t.resumed_from > 0) rows.emplace_back("resumed from step", number_text(t.resumed_from));
  const std::string source = t.from_metrics ? "<p class=\"note\">From metrics.jsonl (no summary.json).</p>" : "";
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

// One run's curves for the chart script: metrics as columns (thinned past kMaxPlottedSteps), every
// validation loss, the steps it resumed after.
json run_series(const RunDir& run, const std::string& name) {
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
  json metrics = json::object();
  for (const char* key : {"step", "loss", "lr", "grad_norm", "tokens_per_s", "mfu"}) metrics[key] = column(kept, key);
  std::vector<const json*> evaluated;  // every step with a validation loss: few, none thinned out
  for (const json& m : run.metrics)
    if (m.contains("val_loss")) evaluated.push_back(&m);
  const double entropy = number_at(run.summary, {"run", "unigram_entropy"});
  return {{"name", name},
          {"metrics", metrics},
          {"validation", {{"step", column(evaluated, "step")}, {"val_loss", column(evaluated, "val_loss")}}},
          {"resumes", resumes},
          {"unigram_entropy", std::isfinite(entropy) ? json(entropy) : json(nullptr)}};
}

// One run's per-op, per-module and memory lists, for its detail charts.
json run_detail(const RunDir& run) {
  json d = {{"has_summary", !run.summary.is_null()}};
  for (const char* key : {"machine", "ops", "modules", "memory_timeline"}) {
    const json* v = find_path(run.summary, {key});
    d[key] = v ? *v : json(nullptr);
  }
  return d;
}

// A canvas charts.js draws chart `id` into, in a box that gives it its height.
std::string canvas(const char* id, const char* label) {
  return fmt::format("<div class=\"chart-box\"><canvas id=\"{}\" role=\"img\" aria-label=\"{}\"></canvas></div>", id, label);
}

std::string figure(const char* id, const char* title, const char* cls = "") {
  return fmt::format("<figure class=\"{}\"><figcaption>{}</figcaption>{}</figure>", cls, title, canvas(id, title));
}

// What was absent or skipped (text, escaped here), or nothing.
std::string notes_section(const std::vector<std::string>& notes) {
  if (notes.empty()) return "";
  std::string out = "<section id=\"notes\"><ul>";
  for (const auto& note : notes) out += "<li>" + html_escape(note) + "</li>";
  return out + "</ul></section>\n";
}

// The curves every page has, one line per run, with the controls that smooth them and put their
// y axes on a log scale (charts.js).
std::string curves_section(bool comparing) {
  std::string out = "<section id=\"controls\">"
                    "<label>smoothing <input type=\"range\" id=\"smoothing\" min=\"0\" max=\"0.99\" step=\"0.01\" value=\"0.6\">"
                    "<span id=\"smoothing-value\">0.60</span></label>"
                    "<label><input type=\"checkbox\" id=\"log-y\"> log y axis (loss, learning rate, gradient norm)</label>"
                    "<span class=\"note\">Hover a chart for its values; click a legend entry to hide it.</span></section>\n";
  out += "<section id=\"charts\">";
  out += figure("chart-loss", comparing ? "Training loss by step (dashed: validation loss)" : "Training and validation loss by step", "wide");
  out += figure("chart-lr", "Learning rate by step");
  out += figure("chart-grad-norm", "Gradient norm by step");
  out += figure("chart-throughput", "Throughput by step");
  out += figure("chart-mfu", "MFU by step");
  return out;
}

// What every page opens with: the document head (CSP, title, error hook, style) and the header.
std::string page_start(const std::string& title_html) {
  std::string out = "<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">"
                    "<meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">"
                    // The browser itself holds the page to "self-contained": nothing may be fetched.
                    "<meta http-equiv=\"Content-Security-Policy\" content=\"default-src 'none'; "
                    "style-src 'unsafe-inline'; script-src 'unsafe-inline'; img-src data:\">";
  out += "<title>tally report: " + title_html + "</title>";
  out += std::string("<script>") + kErrorHookJs + "</script><style>" + kPageCss + "</style></head><body>\n";
  out += "<div id=\"js-errors\" hidden></div>";
  return out + "<header><h1>tally report <span class=\"run-name\">" + title_html + "</span></h1></header>\n";
}

// What every page closes with: the footer, the data blob, Chart.js and the chart script.
std::string page_end(const std::string& footer_html, const json& data) {
  std::string out = "<footer>" + footer_html +
                    " Units: FLOP counts with SI prefixes (1 GFLOP = 10<sup>9</sup>), bytes with binary prefixes (1 MiB = 2<sup>20</sup> B). "
                    "Charts drawn with Chart.js (MIT licence), inlined.</footer>\n";
  out += "<div id=\"report-status\" data-status=\"pending\"></div>\n";
  out += "<script type=\"application/json\" id=\"report-data\">" + json_for_script(data) + "</script>\n";
  out += "<script>" + std::string(embedded::kChartJs, embedded::kChartJs_size) + "</script>\n";
  out += "<script>" + std::string(embedded::kReportChartsJs, embedded::kReportChartsJs_size) + "</script>\n</body></html>\n";
  return out;
}

}  // namespace

std::string render_page(const RunDir& run, std::string_view tally_version) {
  const std::string name = html_escape(run_name(run));
  std::string out = page_start(name) + notes_section(run.notes);
  out += "<section class=\"cards\">" + model_card(run) + machine_card(run) + run_card(run) + "</section>\n";
  out += curves_section(false);
  out += "<figure class=\"wide\"><figcaption>FLOPs and time by module (one profiled step)</figcaption><div class=\"chart-pair\">" +
         canvas("chart-modules-flops", "FLOPs by module") + canvas("chart-modules-time", "time by module") + "</div></figure>";
  out += figure("chart-memory", "Live memory by category over one step (after each op)", "wide");
  out += figure("chart-roofline", "Roofline: achieved FLOP/s vs arithmetic intensity, per op");
  out += time_split_section(run) + "</section>\n" + tables_section(run) + "\n";
  const json data = {{"runs", json::array({run_series(run, run_name(run))})}, {"detail", run_detail(run)}};
  return out + page_end(fmt::format("Written by <code>tally report</code> (tally {}) from {}: config.json, metrics.jsonl, summary.json.",
                                    html_escape(tally_version), name),
                        data);
}

std::string render_comparison(const std::vector<RunDir>& runs, std::string_view tally_version) {
  std::vector<std::string> names = run_labels(runs);
  std::string title;
  for (size_t i = 0; i < names.size(); ++i) title += (i ? " vs " : "") + html_escape(names[i]);
  std::string out = page_start(title);
  std::vector<std::string> notes;
  for (size_t i = 0; i < runs.size(); ++i)
    for (const auto& note : runs[i].notes) notes.push_back(names[i] + ": " + note);
  out += notes_section(notes) + comparison_section(runs, names);
  out += curves_section(true) + "</section>\n";
  json series = json::array();
  for (size_t i = 0; i < runs.size(); ++i) series.push_back(run_series(runs[i], names[i]));
  return out + page_end(fmt::format("Written by <code>tally report</code> (tally {}) from {} runs' config.json, metrics.jsonl and summary.json; "
                                    "each run's own report has its modules, memory and roofline.",
                                    html_escape(tally_version), runs.size()),
                        json{{"runs", series}, {"detail", nullptr}});
}

}  // namespace tally::cli::report
