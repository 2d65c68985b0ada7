#pragma once
// The report page: one self-contained HTML document (inline CSS, inline hand-written JS that draws
// the charts as SVG from a JSON blob embedded in the page; no network).

#include <string>
#include <string_view>

#include "cli/report/run_dir.h"

namespace tally::cli::report {

/// The whole page for `run`; `tally_version` goes into its footer.
std::string render_page(const RunDir& run, std::string_view tally_version);

/// The page's stylesheet and scripts (assets.cpp): the error hook runs first, in <head>, so that
/// any later script error is written into the page where a test can see it.
extern const char* const kPageCss;
extern const char* const kErrorHookJs;
extern const char* const kChartsJs;

}  // namespace tally::cli::report
