#include "cli/usage_error.h"

#include <algorithm>
#include <cstdio>

namespace tally::cli {

namespace {

size_t edit_distance(const std::string& a, const std::string& b) {
  std::vector<size_t> row(b.size() + 1);
  for (size_t j = 0; j <= b.size(); ++j) row[j] = j;
  for (size_t i = 1; i <= a.size(); ++i) {
    size_t diagonal = row[0];
    row[0] = i;
    for (size_t j = 1; j <= b.size(); ++j) {
      const size_t up = row[j];
      row[j] = std::min({row[j] + 1, row[j - 1] + 1, diagonal + (a[i - 1] == b[j - 1] ? 0 : 1)});
      diagonal = up;
    }
  }
  return row[b.size()];
}

/// The long options ("--steps") of the subcommand the line names, else of the app itself.
std::vector<std::string> long_options(const CLI::App& app) {
  const CLI::App* scope = &app;
  for (const CLI::App* sub : app.get_subcommands()) scope = sub;
  std::vector<std::string> names;
  for (const CLI::Option* o : scope->get_options())
    for (const std::string& n : o->get_lnames()) names.push_back("--" + n);
  return names;
}

}  // namespace

std::string nearest_option(const std::string& given, const std::vector<std::string>& known) {
  std::string best;
  size_t best_distance = std::max<size_t>(2, given.size() / 3) + 1;  // closer than this, or nothing
  for (const std::string& k : known)
    if (const size_t d = edit_distance(given, k); d < best_distance) {
      best = k;
      best_distance = d;
    }
  return best;
}

int report_parse_error(const CLI::App& app, const CLI::ParseError& e, const std::vector<std::string>& args) {
  if (e.get_exit_code() == static_cast<int>(CLI::ExitCodes::Success)) return app.exit(e);  // --help, --version
  std::string hint;
  const std::vector<std::string> known = long_options(app);
  for (const std::string& a : args) {
    const std::string flag = a.substr(0, a.find('='));
    if (!flag.starts_with("--") || std::find(known.begin(), known.end(), flag) != known.end()) continue;
    if (const std::string near = nearest_option(flag, known); !near.empty()) {
      hint = "; did you mean " + near + "?";
      break;
    }
  }
  std::fprintf(stderr, "tally: error: %s%s (tally --help, or tally COMMAND --help)\n", e.what(), hint.c_str());
  return kUsageExit;
}

}  // namespace tally::cli
