// The tally executable. Each subcommand lives in its own file; only this main turns errors
// into exit codes.

#include <CLI/CLI.hpp>
#include <cerrno>
#include <csignal>
#include <cstdio>
#include <cstring>
#include <exception>
#include <string>
#include <utility>
#include <vector>

#include "cli/commands.h"
#include "cli/usage_error.h"
#include "tally/error/error.h"

int main(int argc, char** argv) {
  // A file-size limit (RLIMIT_FSIZE) makes a write fail with EFBIG, which every writer turns into
  // an error naming its file (and an atomic write leaves no temporary behind), rather than the
  // signal killing the process mid-write.
  std::signal(SIGXFSZ, SIG_IGN);
  CLI::App app{"tally: a deep-learning framework where every FLOP and byte is on the books"};
  app.require_subcommand(1);
  app.set_version_flag("--version", "tally " TALLY_VERSION " (" TALLY_BUILD_TYPE_STR ")");
  tally::cli::add_info_command(app);
  tally::cli::add_bench_command(app);
  tally::cli::add_estimate_command(app);
  tally::cli::add_inspect_command(app);
  tally::cli::add_report_command(app);
  tally::cli::add_train_command(app);
  tally::cli::add_sample_command(app);
  tally::cli::add_export_command(app);
  // CLI11 answers a misspelt command ("tally trian") with "A subcommand is required" alone.
  if (argc > 1 && argv[1][0] != '-') {
    std::string known;
    bool found = false;
    for (const CLI::App* sub : std::as_const(app).get_subcommands([](const CLI::App*) { return true; })) {
      found = found || sub->get_name() == argv[1];
      known += (known.empty() ? "" : ", ") + sub->get_name();
    }
    if (!found) {
      std::fprintf(stderr, "tally: error: unknown command '%s' (commands: %s; tally --help)\n", argv[1], known.c_str());
      return tally::cli::kUsageExit;
    }
  }
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    return tally::cli::report_parse_error(app, e, std::vector<std::string>(argv + 1, argv + argc));
  } catch (const tally::Error& e) {
    std::fprintf(stderr, "tally: error: %s\n", e.what());
    return 1;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "tally: unexpected error: %s\n", e.what());
    return 2;
  }
  // Output that did not reach its file (a full disk behind `--json > out.json`) is a failure:
  // a script reading it must not see exit status 0.
  errno = 0;
  if (std::fflush(stdout) != 0 || std::ferror(stdout)) {
    std::fprintf(stderr, "tally: error: cannot write to standard output%s%s\n", errno ? ": " : "", errno ? std::strerror(errno) : "");
    return 1;
  }
  return 0;
}
