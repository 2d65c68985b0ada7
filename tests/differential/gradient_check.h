#pragma once
// The backward half of a gradient case: run tally's backward from output 0 with torch's upstream
// gradient bytes and compare every input base's .grad with torch's.

#include <optional>
#include <string>
#include <vector>

#include "differential/reference_run.h"
#include "tally/tally.h"

namespace tally::difftest {

/// Why tally's gradients disagree with torch's for `rc` (a case with `gradient` set), or nullopt.
/// `bases` are the case's input bases (leaves where their spec requires grad) and `outs` tally's
/// forward outputs computed from views of them; the forward outputs must already match torch's.
std::optional<std::string> check_gradients(const ReferencedCase& rc, const std::string& dir,
                                           const std::vector<Tensor>& bases, const std::vector<Tensor>& outs);

}  // namespace tally::difftest
