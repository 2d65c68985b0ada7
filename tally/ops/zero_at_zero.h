#pragma once
// f(s) with PyTorch's zero gradient where s is 0: the rule of std and of the vector norms, whose
// backward formulas mask the points where the root's derivative is infinite.

#include "tally/ops/creation.h"
#include "tally/ops/elementwise.h"

namespace tally::ops {

/// f(s) where s ≠ 0 and 0 where s = 0, with no gradient through the zeros: there f sees 1
/// instead (√s at 0 would give d√s/ds = ∞, and ∞ · 0 = NaN from the pass below it). s ≥ 0, and
/// f(0) is 0 (a root).
template <class F>
Tensor zero_at_zero(const Tensor& s, F f) {
  const Tensor zero = eq(s, zeros({}, s.options()));
  return where(zero, zeros({}, s.options()), f(where(zero, ones({}, s.options()), s)));
}

}  // namespace tally::ops
