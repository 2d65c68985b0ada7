// The tally executable. Each subcommand lives in its own file; only this main turns errors
// into exit codes.

#include <CLI/CLI.hpp>
#include <cstdio>
#include <exception>

#include "cli/commands.h"
#include "tally/error/error.h"

int main(int argc, char** argv) {
  CLI::App app{"tally: a deep-learning framework where every FLOP and byte is on the books"};
  app.require_subcommand(1);
  tally::cli::add_info_command(app);
  tally::cli::add_bench_command(app);
  tally::cli::add_estimate_command(app);
  tally::cli::add_inspect_command(app);
  tally::cli::add_report_command(app);
  tally::cli::add_train_command(app);
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    return app.exit(e);
  } catch (const tally::Error& e) {
    std::fprintf(stderr, "tally: error: %s\n", e.what());
    return 1;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "tally: unexpected error: %s\n", e.what());
    return 2;
  }
  return 0;
}
