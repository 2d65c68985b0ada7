#pragma once
// What `tally` says of a command line it cannot parse: CLI11's message, a "did you mean" for a
// misspelt option, and exit status 2, the usage-error convention of argparse and getopt.

#include <CLI/CLI.hpp>
#include <string>
#include <vector>

namespace tally::cli {

/// Exit status of a command line that does not parse.
inline constexpr int kUsageExit = 2;

/// The option among `known` nearest to the misspelt `given` ("--stpes" -> "--steps"), or "" when
/// none is close enough to be what was meant.
std::string nearest_option(const std::string& given, const std::vector<std::string>& known);

/// Prints the parse error `e` of `app` on `args` (the words after the program name) and returns
/// the exit status: 0 for --help and --version, kUsageExit for anything else.
int report_parse_error(const CLI::App& app, const CLI::ParseError& e, const std::vector<std::string>& args);

}  // namespace tally::cli
