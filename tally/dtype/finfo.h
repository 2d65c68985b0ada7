#pragma once
// Machine limits of the floating dtypes, as torch.finfo reports them.

#include "tally/dtype/dtype.h"

namespace tally {

/// Limits of a floating dtype (torch.finfo); every value is exact in double.
struct FInfo {
  /// Storage width in bits.
  int bits;
  /// Largest finite value.
  double max;
  /// Most negative finite value (-max), as torch defines `min`.
  double min;
  /// Distance from 1.0 to the next larger representable value.
  double eps;
  /// Same as smallest_normal (torch's historical name).
  double tiny;
  /// Smallest positive normal value.
  double smallest_normal;
  /// Smallest positive subnormal value (numpy's name; torch does not report it).
  double smallest_subnormal;
  /// 10^-digits10: the decimal precision torch reports.
  double resolution;
  /// The dtype described.
  Dtype dtype;
};

/// torch.finfo(d). Raises TypeError for integral and bool dtypes.
FInfo finfo(Dtype d);

}  // namespace tally
