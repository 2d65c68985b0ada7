#pragma once
// Per-tensor FP8 scaling with delayed scaling, as NVIDIA Transformer Engine defines it: a tensor
// is cast to FP8 with a scale chosen from the amaxes (largest |x|) of its previous casts, so the
// cast needs no reduction of its own. Each cast records its amax in a history; update() then sets
//   amax  = max over the history ("max") or its newest entry ("most_recent"),
//   scale = (fp8_max / amax) / 2^margin,
// keeping the previous scale when that amax is zero or not finite, and rolls the history (the
// newest slot moves to the back, a zeroed one takes its place). E4M3 (max 448) serves weights and
// activations, E5M2 (max 57344) gradients (TE's "hybrid" format). Casts saturate: values beyond
// ±fp8_max after scaling become ±fp8_max, not NaN or inf.

#include <cstdint>
#include <vector>

#include "tally/core/ordered_dict.h"
#include "tally/core/tensor.h"

namespace tally::amp {

enum class AmaxAlgorithm : uint8_t { Max, MostRecent };

struct DelayedScalingOptions {
  int64_t amax_history_len = 1024;  ///< Transformer Engine's default
  int64_t margin = 0;               ///< scale down by 2^margin for headroom
  AmaxAlgorithm algorithm = AmaxAlgorithm::Max;
};

/// One tensor's FP8 scale and amax history.
class DelayedScaling {
 public:
  /// `fp8` is kFloat8_e4m3fn or kFloat8_e5m2 (TypeError otherwise); ValueError for a history
  /// length below 1 or a negative margin. The scale starts at 1.
  explicit DelayedScaling(Dtype fp8, DelayedScalingOptions options = {});

  /// Record a cast's amax in the newest history slot (the largest of those recorded since the
  /// last update, as a slot holds one step's amax).
  void record_amax(double amax);
  /// The scale for the next casts from the history (the formula above), then roll the history.
  void update();

  double scale() const { return scale_; }
  /// 1 / scale: what a matmul multiplies an FP8 product by.
  double scale_inv() const { return 1.0 / scale_; }
  Dtype dtype() const { return dtype_; }
  /// The FP8 format's largest finite value (448 for E4M3, 57344 for E5M2).
  double fp8_max() const { return fp8_max_; }
  /// The history, newest slot first.
  const std::vector<double>& amax_history() const { return history_; }

  /// Cast `x` to FP8 with the current scale, saturating, and record its amax, NaN elements
  /// skipped as TE's are (ledger ops: abs-max, scale in float32, clamp, cast).
  Tensor quantize(const Tensor& x);

  /// "scale" (float64 0-d) and "amax_history" (float64 [len]): what a checkpoint stores.
  StateDict state_dict() const;
  /// Restore state_dict(); ValueError for a missing key or a history of another length.
  void load_state_dict(const StateDict& state);

 private:
  Dtype dtype_;
  DelayedScalingOptions options_;
  double fp8_max_;
  double scale_ = 1.0;
  std::vector<double> history_;
};

}  // namespace tally::amp
