#pragma once
// The report's tables: predicted vs measured, the compute/memory-bound time split, the costliest ops.

#include <string>

#include "cli/report/run_dir.h"

namespace tally::cli::report {

/// The tables section (HTML); parts whose summary.json fields are missing say so.
std::string tables_section(const RunDir& run);
/// The compute- vs memory-bound time split (HTML), which the page puts beside the roofline.
std::string time_split_section(const RunDir& run);

}  // namespace tally::cli::report
