#pragma once
// Checking one tally result against torch's: dtype and shape exactly, then values within a
// tolerance chosen by dtype (exact for integers and bool).

#include <optional>
#include <string>
#include <vector>

#include "differential/npy.h"
#include "tally/tally.h"

namespace tally::difftest {

/// |got - want| <= atol + rtol·|want| per element; NaN must meet NaN and ±inf the same inf.
struct Tolerance {
  double rtol = 0;
  double atol = 0;
};

/// The tolerance for results of `dtype`. When `accumulates` (sums, products, matmuls) the
/// absolute part is rtol · max(1, largest |want|), since rounding of many terms adds up.
Tolerance tolerance_for(Dtype dtype, bool accumulates, double max_abs_want);

/// A description of the first difference (dtype, shape) or the worst value mismatch with its
/// index and the count of mismatches; nullopt when `got` matches `want` (stored with `want_dtype`).
/// `exact_values` demands equal values (NaN meets NaN) for ops that only move or pick values.
std::optional<std::string> compare(const Tensor& got, const NpyArray& want, Dtype want_dtype, bool accumulates,
                                   bool exact_values);

/// A description of how `got`'s strides differ from torch's, over the dims of more than one
/// element (a dim of size 1 may have any stride); nullopt when they agree.
std::optional<std::string> compare_strides(const Tensor& got, const std::vector<int64_t>& want);

}  // namespace tally::difftest
