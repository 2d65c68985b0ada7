// Only the families whose tests are selected (--gtest_filter, or CTest running one test per
// process) are generated and computed, so a single test costs one small Python run.
// Set TALLY_DIFF_KEEP=1 to keep the temporary directory for inspection.

#include "differential/reference_run.h"

#include <gtest/gtest.h>

#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <random>
#include <set>
#include <sstream>

#include "differential/catalog.h"

namespace tally::difftest {
namespace {

namespace fs = std::filesystem;

ReferenceRun& run_state() {
  static ReferenceRun run;
  return run;
}

// Names of the Differential tests this process will run.
std::set<std::string> selected_families() {
  std::set<std::string> out;
  const ::testing::UnitTest& unit = *::testing::UnitTest::GetInstance();
  for (int i = 0; i < unit.total_test_suite_count(); ++i) {
    const ::testing::TestSuite& suite = *unit.GetTestSuite(i);
    if (std::string(suite.name()) != "Differential") continue;
    for (int j = 0; j < suite.total_test_count(); ++j)
      if (suite.GetTestInfo(j)->should_run()) out.insert(suite.GetTestInfo(j)->name());
  }
  return out;
}

std::string read_text(const fs::path& p) {
  std::ifstream f(p);
  std::stringstream ss;
  ss << f.rdbuf();
  return ss.str();
}

fs::path make_temp_dir() {
  std::random_device rd;
  for (int attempt = 0; attempt < 100; ++attempt) {
    fs::path p = fs::temp_directory_path() / detail::str_cat("tally_diff_", rd());
    if (fs::create_directory(p)) return p;
  }
  throw std::runtime_error("cannot create a temporary directory");
}

void run_reference(ReferenceRun& run) {
  const std::set<std::string> families = selected_families();
  if (families.empty()) return;
  std::set<std::string> seen;
  for (const std::string& family : families) {
    auto it = catalog().find(family);
    if (it == catalog().end()) {
      run.error = detail::str_cat("no case builder for Differential.", family, " in catalog.cpp");
      return;
    }
    for (Case& c : it->second()) {
      if (!seen.insert(c.name()).second) {
        run.error = detail::str_cat("two cases share the name ", c.name(), ": make them differ in the catalog");
        return;
      }
      std::string id = detail::str_cat("c", run.cases.size());
      run.cases.push_back({std::move(c), std::move(id), nullptr});
    }
  }
  run.dir = make_temp_dir().string();
  nlohmann::json list = nlohmann::json::array();
  for (const ReferencedCase& rc : run.cases) list.push_back(to_json(rc.c, rc.id));
  const fs::path cases_path = fs::path(run.dir) / "cases.json", log_path = fs::path(run.dir) / "reference.log";
  std::ofstream(cases_path) << list.dump();

  // (str_cat, not operator+: GCC 12 misreports "literal" + std::string with -Wrestrict.)
  const std::string cmd = detail::str_cat("'", TALLY_TEST_PYTHON, "' '", TALLY_TEST_DIR, "/differential/reference.py' '",
                                          cases_path.string(), "' '", run.dir, "' > '", log_path.string(), "' 2>&1");
  const auto start = std::chrono::steady_clock::now();
  const int status = std::system(cmd.c_str());
  const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  if (status != 0) {
    run.error = detail::str_cat("reference.py failed (status ", status, "): ", cmd, "\n", read_text(log_path));
    return;
  }
  const nlohmann::json results = nlohmann::json::parse(read_text(fs::path(run.dir) / "results.json"));
  for (ReferencedCase& rc : run.cases) rc.result = results.at(rc.id);
  std::printf("[differential] torch computed %zu cases in %.1f s (%s)\n", run.cases.size(), seconds, run.dir.c_str());
}

class ReferenceEnvironment : public ::testing::Environment {
 public:
  void SetUp() override {
    try {
      run_reference(run_state());
    } catch (const std::exception& e) {
      run_state().error = detail::str_cat("differential setup failed: ", e.what());
    }
  }
  void TearDown() override {
    const char* keep = std::getenv("TALLY_DIFF_KEEP");
    if (!run_state().dir.empty() && !(keep && std::string(keep) == "1")) {
      std::error_code ec;
      fs::remove_all(run_state().dir, ec);
    }
  }
};

// Registered before main() runs RUN_ALL_TESTS; gtest owns and deletes it.
[[maybe_unused]] ::testing::Environment* const kEnvironment =
    ::testing::AddGlobalTestEnvironment(new ReferenceEnvironment);

}  // namespace

const ReferenceRun& reference_run() { return run_state(); }

}  // namespace tally::difftest
