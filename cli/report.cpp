// `tally report RUN_DIR [--out FILE]`: one self-contained HTML page about a training run (the
// directory docs/run_dir.md describes), written to RUN_DIR/report.html unless --out says otherwise.

#include <fmt/core.h>

#include <filesystem>
#include <fstream>
#include <memory>
#include <string>

#include "cli/commands.h"
#include "cli/report/page.h"
#include "cli/report/run_dir.h"
#include "tally/error/error.h"

namespace tally::cli {

namespace {

struct ReportArgs {
  std::string run_dir;
  std::string out;
};

void run_report(const ReportArgs& args) {
  const report::RunDir run = report::load_run_dir(args.run_dir);
  const std::filesystem::path out = args.out.empty() ? std::filesystem::path(args.run_dir) / "report.html" : std::filesystem::path(args.out);
  const std::string page = report::render_page(run, TALLY_VERSION);
  // Written beside the target and renamed, so a reader never sees half a page.
  const std::filesystem::path tmp = out.string() + ".tmp";
  {
    std::ofstream f(tmp, std::ios::binary | std::ios::trunc);
    if (!f) throw IOError("cannot write " + out.string() + " (opening " + tmp.string() + " failed)");
    f << page;
    f.close();
    if (!f) throw IOError("cannot write " + tmp.string());
  }
  std::error_code ec;
  std::filesystem::rename(tmp, out, ec);
  if (ec) throw IOError("cannot rename " + tmp.string() + " to " + out.string() + ": " + ec.message());
  fmt::print("{}\n", out.string());
}

}  // namespace

void add_report_command(CLI::App& app) {
  auto args = std::make_shared<ReportArgs>();
  auto* cmd = app.add_subcommand("report", "Write a training run's report: one self-contained HTML page (charts, tables, no network)");
  cmd->add_option("RUN_DIR", args->run_dir, "The run's directory (config.json, metrics.jsonl, summary.json)")->required();
  cmd->add_option("--out", args->out, "Where to write the page (default RUN_DIR/report.html)");
  cmd->callback([args] { run_report(*args); });
}

}  // namespace tally::cli
