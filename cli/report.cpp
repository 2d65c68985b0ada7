// `tally report RUN_DIR... [--out FILE]`: one self-contained HTML page about a training run (the
// directory docs/run_dir.md describes), written to RUN_DIR/report.html unless --out says otherwise;
// given several runs, one page that compares them, written to compare.html in the working directory.

#include <fmt/core.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <memory>
#include <string>
#include <vector>

#include "cli/commands.h"
#include "cli/report/page.h"
#include "cli/report/run_dir.h"
#include "tally/error/error.h"
#include "tally/io/atomic_file.h"

namespace tally::cli {

namespace {

struct ReportArgs {
  std::vector<std::string> run_dirs;
  std::string out;
};

// IOError when `path` exists and is not a page tally wrote; `hint` says how to write elsewhere.
void refuse_foreign_page(const std::filesystem::path& path, const std::string& hint) {
  std::error_code ec;
  if (!std::filesystem::exists(std::filesystem::symlink_status(path, ec))) return;
  // Every page render_page draws names itself in its title, within its first few hundred bytes.
  constexpr std::string_view kMark = "<title>tally report: ";
  std::string head(4096, '\0');
  std::ifstream in(path, std::ios::binary);
  in.read(head.data(), static_cast<std::streamsize>(head.size()));
  head.resize(static_cast<size_t>(std::max<std::streamsize>(in.gcount(), 0)));
  TALLY_CHECK_TYPE(IOError, head.find(kMark) != std::string::npos, path.string(),
                   " is not a report tally wrote, and tally does not write over it: move it away, or ", hint);
}

void write_page(const std::filesystem::path& path, const std::string& page) {
  io::write_file_atomic(path, page);  // never half a page
}

// The comparison page of several runs: to `out`, or compare.html in the working directory.
std::filesystem::path write_comparison(const std::vector<std::string>& run_dirs, const std::string& out) {
  const std::filesystem::path path = out.empty() ? std::filesystem::path("compare.html") : std::filesystem::path(out);
  if (out.empty()) refuse_foreign_page(path, "give --out FILE");
  std::vector<report::RunDir> runs;
  for (const auto& dir : run_dirs) runs.push_back(report::load_run_dir(dir));
  write_page(path, report::render_comparison(runs, TALLY_VERSION));
  return path;
}

}  // namespace

void refuse_foreign_report(const std::string& run_dir) {
  refuse_foreign_page(std::filesystem::path(run_dir) / "report.html",
                      "choose another run directory (`tally report " + run_dir + " --out FILE` writes a run's report elsewhere)");
}

std::filesystem::path write_report(const std::string& run_dir, const std::string& out) {
  if (out.empty()) refuse_foreign_report(run_dir);  // a path the user names is theirs to replace
  const report::RunDir run = report::load_run_dir(run_dir);
  const std::filesystem::path path = out.empty() ? std::filesystem::path(run_dir) / "report.html" : std::filesystem::path(out);
  write_page(path, report::render_page(run, TALLY_VERSION));
  return path;
}

void add_report_command(CLI::App& app) {
  auto args = std::make_shared<ReportArgs>();
  auto* cmd = app.add_subcommand("report",
                                 "Write a training run's report, or compare several runs: one self-contained HTML page (charts, tables, no network)");
  cmd->add_option("RUN_DIR", args->run_dirs, "The run's directory (config.json, metrics.jsonl, summary.json); several to compare them")
      ->required();
  cmd->add_option("--out", args->out, "Where to write the page (default RUN_DIR/report.html; for several runs, compare.html)");
  cmd->callback([args] {
    const auto& dirs = args->run_dirs;
    fmt::print("{}\n", (dirs.size() == 1 ? write_report(dirs[0], args->out) : write_comparison(dirs, args->out)).string());
  });
}

}  // namespace tally::cli
