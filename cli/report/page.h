#pragma once
// The report page: one self-contained HTML document (inline CSS; Chart.js and charts.js inlined,
// drawing the charts from a JSON blob embedded in the page; no network).

#include <cstddef>
#include <string>
#include <string_view>
#include <vector>

#include "cli/report/run_dir.h"

namespace tally::cli::report {

/// The whole page for `run`; `tally_version` goes into its footer.
std::string render_page(const RunDir& run, std::string_view tally_version);

/// Several runs on one page: a table of their totals, the settings in which they differ, and their
/// curves overlaid (loss, validation loss, learning rate, gradient norm, tokens/s, MFU).
std::string render_comparison(const std::vector<RunDir>& runs, std::string_view tally_version);

/// The page's stylesheet and first script (assets.cpp): the error hook runs first, in <head>, so
/// that any later script error is written into the page where a test can see it.
extern const char* const kPageCss;
extern const char* const kErrorHookJs;

}  // namespace tally::cli::report

// Compiled in from files by CMakeLists.txt (cmake/EmbedFile.cmake): Debian's Chart.js, and
// cli/report/charts.js, which draws the page's charts with it.
namespace tally::embedded {
extern const char kChartJs[];
extern const std::size_t kChartJs_size;
extern const char kReportChartsJs[];
extern const std::size_t kReportChartsJs_size;
}  // namespace tally::embedded
