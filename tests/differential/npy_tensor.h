#pragma once
// Moving the reference's .npy files into tally tensors, checking that each file holds the dtype
// the case says it should.

#include <string>

#include "differential/npy.h"
#include "tally/tally.h"

namespace tally::difftest {

/// Reads <dir>/<file>; raises std::runtime_error unless it stores elements of `dtype`.
NpyArray load_npy(const std::string& dir, const std::string& file, Dtype dtype);
/// A fresh contiguous tally tensor with exactly the bytes of `a`.
Tensor to_tensor(const NpyArray& a, Dtype dtype);

}  // namespace tally::difftest
