#pragma once
// Registration of the subcommands, one file each.

#include <CLI/CLI.hpp>

namespace tally::cli {

/// `tally info`: CPU features, cores, build configuration, promised peaks.
void add_info_command(CLI::App& app);

}  // namespace tally::cli
