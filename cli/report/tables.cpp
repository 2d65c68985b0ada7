// The report's tables (tables.h). Every figure comes from summary.json (docs/run_dir.md).

#include "cli/report/tables.h"

#include <fmt/core.h>

#include <algorithm>
#include <cmath>

#include "cli/report/format.h"
#include "cli/report/html.h"
#include "tally/core/allocator.h"

namespace tally::cli::report {

using json = nlohmann::ordered_json;

namespace {

std::string ratio_text(double measured, double predicted) {
  if (std::isnan(measured) || std::isnan(predicted) || predicted == 0) return missing_value();
  return fmt::format("{:.2f}×", measured / predicted);
}

std::string predicted_vs_measured(const json& s) {
  Table t{{"quantity", "predicted", "measured", "measured / predicted"}, {}};
  auto flops_row = [&](const char* label, double p, double m) {
    t.rows.push_back({label, value_or_missing(p, flops_text), value_or_missing(m, flops_text), ratio_text(m, p)});
  };
  const double pf = number_at(s, {"flops_per_token", "predicted", "forward"});
  const double pb = number_at(s, {"flops_per_token", "predicted", "backward"});
  const double mf = number_at(s, {"flops_per_token", "measured", "forward"});
  const double mb = number_at(s, {"flops_per_token", "measured", "backward"});
  flops_row("FLOPs per token, forward", pf, mf);
  flops_row("FLOPs per token, backward", pb, mb);
  flops_row("FLOPs per token, forward + backward", pf + pb, mf + mb);
  flops_row("FLOPs per token, optimizer", number_at(s, {"flops_per_token", "predicted", "optimizer"}),
            number_at(s, {"flops_per_token", "measured", "optimizer"}));
  const double promised = number_at(s, {"machine", "peak_flops_promised"});
  const double measured_peak = number_at(s, {"machine", "peak_flops_measured"});
  // MFU by PaLM's model FLOPs, HFU by every FLOP on the ledger (Note [MFU and HFU] in tally/train/summary.h).
  for (const char* kind : {"mfu", "hfu"}) {
    const std::string name = kind == std::string("mfu") ? "MFU (model FLOPs, PaLM's 6·N + 12·L·H·Q·T)" : "HFU (every FLOP on the ledger)";
    t.rows.push_back({name + " against the promised peak (" + value_or_missing(promised, [](double v) { return si(v, "FLOP/s"); }) + ")",
                      missing_value(), value_or_missing(number_at(s, {kind, "promised"}), percent_text), ""});
    t.rows.push_back({name + " against the measured peak (" + value_or_missing(measured_peak, [](double v) { return si(v, "FLOP/s"); }) + ")",
                      missing_value(), value_or_missing(number_at(s, {kind, "measured"}), percent_text), ""});
  }
  const double ps = number_at(s, {"step_time", "predicted_s"}), ms = number_at(s, {"step_time", "measured_s"});
  t.rows.push_back({"step time", value_or_missing(ps, seconds_text), value_or_missing(ms, seconds_text), ratio_text(ms, ps)});
  std::string out = render_table(t, "numbers");
  if (const std::string note = text_at(s, {"step_time", "note"}); !note.empty())
    out += "<p class=\"note\">Step time: " + html_escape(note) + "</p>";
  return out;
}

std::string memory_table(const json& s) {
  if (!find_path(s, {"memory"})) return missing_block("summary.json has no \"memory\".");
  // Rows in the order a step's bytes come to life, each its category's own peak; then the
  // simultaneous peak, below their sum, and what the resident set holds besides the tensors.
  Table t{{"memory (each category's own peak over a step)", "predicted", "tracked peak", "tracked / predicted"}, {}};
  for (int i = 0; i < kNumMemoryCategories; ++i) {
    const std::string c(memory_category_name(static_cast<MemoryCategory>(i)));
    const double p = number_at(s, {"memory", "predicted", c.c_str()}), m = number_at(s, {"memory", "tracked_peak", c.c_str()});
    if (std::isnan(p) && std::isnan(m)) continue;  // a category a run's summary predates (working_copies)
    t.rows.push_back({c, value_or_missing(p, bytes_text), value_or_missing(m, bytes_text), ratio_text(m, p)});
  }
  // Note [What holds "other"] in tally/train/step_profile.cpp: its highest point between ops, split.
  if (const double h = number_at(s, {"memory", "other", "highest_between_ops"}); !std::isnan(h)) {
    const auto part = [&](const char* key) { return signed_bytes_text(number_at(s, {"memory", "other", key})); };
    t.rows.push_back({"… other at its highest between ops: " + bytes_text(number_at(s, {"memory", "other", "before_the_step"})) +
                          " live before the step, " + part("change_in_forward") + " over the forward, " + part("change_in_backward") +
                          " over the backward, " + part("change_in_optimizer") + " over the optimizer",
                      "", bytes_text(h), ""});
  }
  const double pt = number_at(s, {"memory", "predicted_peak_total"}), mt = number_at(s, {"memory", "tracked_peak_total"});
  t.rows.push_back({"<b>all at once</b> (the simultaneous peak, below the sum of the rows above)", value_or_missing(pt, bytes_text),
                    value_or_missing(mt, bytes_text), ratio_text(mt, pt)});
  t.rows.push_back({"allocator reserved (live tensors, size-class rounding, freed blocks kept for reuse)", "",
                    value_or_missing(number_at(s, {"memory", "tracked_peak_reserved"}), bytes_text), ""});
  t.rows.push_back({"process peak RSS (the kernel's high-water mark)", "",
                    value_or_missing(number_at(s, {"memory", "process_peak_rss"}), bytes_text), ""});
  const double anon = number_at(s, {"memory", "process_at_end", "anonymous"}), files = number_at(s, {"memory", "process_at_end", "files"});
  if (!std::isnan(anon)) {
    t.rows.push_back({"… at the end: anonymous (tensors, the allocator's cache, heap, stacks)", "", bytes_text(anon), ""});
    t.rows.push_back({"… at the end: files (code, libraries, the token data)", "", value_or_missing(files, bytes_text), ""});
  }
  return render_table(t, "numbers");
}

std::string time_split(const json& s) {
  const double c = number_at(s, {"time_split", "compute_bound_s"}), m = number_at(s, {"time_split", "memory_bound_s"});
  double f = number_at(s, {"time_split", "compute_bound_fraction"});
  if (std::isnan(c) && std::isnan(m)) return missing_block("summary.json has no \"time_split\".");
  if (std::isnan(f) && c + m > 0) f = c / (c + m);
  Table t{{"ops that are", "time in one step", "share"}, {}};
  t.rows.push_back({"compute-bound (intensity above the ridge point)", value_or_missing(c, seconds_text),
                    value_or_missing(f, percent_text)});
  t.rows.push_back({"memory-bound (intensity below the ridge point)", value_or_missing(m, seconds_text),
                    value_or_missing(std::isnan(f) ? f : 1 - f, percent_text)});
  if (const double comm = number_at(s, {"time_split", "communication_s"}); comm > 0)  // NaN (absent) compares false
    t.rows.push_back({"collectives (data parallel: bytes between ranks; not in the shares)", seconds_text(comm), ""});
  std::string out = render_table(t, "numbers");
  if (!std::isnan(f)) {
    const double pc = std::clamp(f, 0.0, 1.0) * 100;
    out += fmt::format("<div class=\"split\" title=\"compute-bound {0:.1f}%, memory-bound {1:.1f}%\">"
                       "<span class=\"compute\" style=\"width:{0:.2f}%\"></span><span class=\"memory\" style=\"width:{1:.2f}%\"></span></div>",
                       pc, 100 - pc);
  }
  return out;
}

std::vector<const json*> objects(const json* arr) {
  std::vector<const json*> out;
  if (arr && arr->is_array())
    for (const auto& e : *arr)
      if (e.is_object()) out.push_back(&e);
  return out;
}

std::string ops_table(const std::vector<const json*>& ops, double step_seconds) {
  Table t{{"op", "phase", "calls", "FLOPs", "bytes", "time", "share of op time", "FLOP/byte", "achieved", "bound"}, {}};
  for (const json* op : ops) {
    const double flops = number_at(*op, {"flops"}), bytes = number_at(*op, {"bytes"}), secs = number_at(*op, {"seconds"});
    double intensity = number_at(*op, {"intensity"});
    if (std::isnan(intensity) && bytes > 0) intensity = flops / bytes;
    t.rows.push_back({"<code>" + html_escape(text_at(*op, {"name"})) + "</code>", html_escape(text_at(*op, {"phase"})),
                      html_escape(text_at(*op, {"calls"})), value_or_missing(flops, flops_text),
                      value_or_missing(bytes, bytes_text), value_or_missing(secs, seconds_text),
                      step_seconds > 0 ? value_or_missing(secs / step_seconds, percent_text) : missing_value(),
                      value_or_missing(intensity, [](double v) { return number_text(v); }),
                      secs > 0 ? value_or_missing(flops / secs, [](double v) { return si(v, "FLOP/s"); }) : missing_value(),
                      html_escape(text_at(*op, {"bound"}))});
  }
  return render_table(t, "numbers ops");
}

std::string costliest_ops(const json& s) {
  std::vector<const json*> ops = objects(find_path(s, {"ops"}));
  double total = 0;
  for (const json* op : ops)
    if (double v = number_at(*op, {"seconds"}); v > 0) total += v;
  std::sort(ops.begin(), ops.end(), [](const json* a, const json* b) {
    const double sa = number_at(*a, {"seconds"}), sb = number_at(*b, {"seconds"});
    return (std::isnan(sa) ? -1 : sa) > (std::isnan(sb) ? -1 : sb);
  });
  std::vector<const json*> top = objects(find_path(s, {"top_ops"}));
  if (top.empty()) top.assign(ops.begin(), ops.begin() + static_cast<std::ptrdiff_t>(std::min<size_t>(5, ops.size())));
  if (top.empty()) return missing_block("summary.json lists no ops.");
  std::string out = ops_table(top, total);
  out += fmt::format("<details><summary>All {} ops of the profiled step, costliest first</summary>{}</details>", ops.size(),
                     ops_table(ops, total));
  return out;
}

}  // namespace

std::string tables_section(const RunDir& run) {
  const json& s = run.summary;
  std::string out = "<section id=\"tables\">";
  if (s.is_null()) {
    out += "<h2>Predicted vs measured</h2>" + missing_block("Needs summary.json, which tally train writes at the end of the run.");
    return out + "</section>";
  }
  out += "<div class=\"grid\"><div><h2>Predicted vs measured</h2>" + predicted_vs_measured(s) + "</div>";
  out += "<div><h2>Memory by category</h2>" + memory_table(s) + "</div></div>";
  out += "<h2>The five costliest ops (one profiled step)</h2>" + costliest_ops(s);
  return out + "</section>";
}

std::string time_split_section(const RunDir& run) {
  std::string out = "<div class=\"side\" id=\"time-split\"><h2>Time split: compute- vs memory-bound</h2>";
  out += run.summary.is_null() ? missing_block("Needs summary.json, which tally train writes at the end of the run.") : time_split(run.summary);
  return out + "<p class=\"note\">An op is compute-bound when its arithmetic intensity (FLOP/byte) is above the ridge "
               "point, the measured peak FLOP/s over the measured bandwidth; the roofline shows each op against both roofs.</p></div>";
}

}  // namespace tally::cli::report
