#pragma once
// The tally half of the op tables: each case's `op` name mapped to the tally call it tests.
// reference.py holds the torch half under the same names.

#include <nlohmann/json.hpp>

#include <string>
#include <vector>

#include "tally/tally.h"

namespace tally::difftest {

/// Runs op `op` on `views` (the inputs as the op sees them) with `args`; `bases` are the tensors
/// the views were made from, which in-place ops return too so that writes outside the view show.
/// Raises std::out_of_range for an unknown op name; tally errors pass through.
std::vector<Tensor> run_tally_op(const std::string& op, std::vector<Tensor>& views, std::vector<Tensor>& bases,
                                 const nlohmann::json& args);

}  // namespace tally::difftest
