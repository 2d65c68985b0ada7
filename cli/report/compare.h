#pragma once
// The comparison page's own sections (`tally report A B ...`): the runs' totals side by side and
// the settings in which their configurations differ.

#include <string>
#include <vector>

#include "cli/report/run_dir.h"

namespace tally::cli::report {

/// One label per run for the legend and the table: each directory's own name, or, where two runs'
/// names are the same, the paths as given.
std::vector<std::string> run_labels(const std::vector<RunDir>& runs);

/// The totals table and the configuration differences (HTML), `labels` naming the runs.
std::string comparison_section(const std::vector<RunDir>& runs, const std::vector<std::string>& labels);

}  // namespace tally::cli::report
