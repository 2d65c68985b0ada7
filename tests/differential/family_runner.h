#pragma once
// Running one family's cases in tally and checking them against the reference results.

#include <string>

namespace tally::difftest {

/// Runs every case of `family`, reports each unexpected mismatch as a GoogleTest failure naming
/// the case, and prints a one-line summary: on the CPU, then on the GPU where there is one.
void run_family(const std::string& family);

}  // namespace tally::difftest
