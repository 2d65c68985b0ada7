#pragma once
// Running reference.py once per test-binary run: a GoogleTest global environment collects the
// cases of every selected Differential test, has torch compute them all in one Python process,
// and keeps the results for the tests to read.

#include <nlohmann/json.hpp>

#include <string>
#include <vector>

#include "differential/case.h"

namespace tally::difftest {

/// A case as sent to the reference: its file-name prefix and torch's outcome.
struct ReferencedCase {
  Case c;
  std::string id;        ///< files are <dir>/<id>_in<k>.npy and <id>_out<k>.npy
  nlohmann::json result; ///< {"status", "error", "outputs": [{"dtype"}]} from reference.py
};

/// What the environment produced for the tests.
struct ReferenceRun {
  std::string dir;    ///< temporary directory holding the .npy files
  std::string error;  ///< non-empty when the reference could not be run; every test fails with it
  std::vector<ReferencedCase> cases;
};

/// The run for this process (filled by the environment's SetUp).
const ReferenceRun& reference_run();

}  // namespace tally::difftest
