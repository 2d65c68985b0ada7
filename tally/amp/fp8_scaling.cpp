#include "tally/amp/fp8_scaling.h"

#include <algorithm>
#include <cmath>

#include "tally/dtype/finfo.h"
#include "tally/error/error.h"
#include "tally/ops/creation.h"
#include "tally/ops/elementwise.h"
#include "tally/ops/reduce.h"

namespace tally::amp {

namespace {

/// max(a, b) in which a NaN wins (std::max would drop it), so that a bad cast keeps the scale.
double nan_max(double a, double b) { return std::isnan(a) || std::isnan(b) ? NAN : std::max(a, b); }

}  // namespace

DelayedScaling::DelayedScaling(Dtype fp8, DelayedScalingOptions options) : dtype_(fp8), options_(options) {
  TALLY_CHECK_TYPE_ERROR(is_float8(fp8), "DelayedScaling: expected a float8 dtype (float8_e4m3fn or float8_e5m2), got ",
                         dtype_name(fp8));
  TALLY_CHECK(options.amax_history_len >= 1, "DelayedScaling: amax_history_len must be >= 1, got ", options.amax_history_len);
  TALLY_CHECK(options.margin >= 0, "DelayedScaling: margin must be >= 0, got ", options.margin);
  fp8_max_ = finfo(fp8).max;
  history_.assign(static_cast<size_t>(options.amax_history_len), 0.0);
}

void DelayedScaling::record_amax(double amax) {
  history_[0] = nan_max(history_[0], amax);
}

void DelayedScaling::update() {
  double amax = history_[0];
  if (options_.algorithm == AmaxAlgorithm::Max)
    for (double a : history_) amax = nan_max(amax, a);
  // A zero amax (nothing seen) or a non-finite one (an overflow) keeps the previous scale.
  if (amax > 0.0 && std::isfinite(amax)) scale_ = (fp8_max_ / amax) / std::ldexp(1.0, static_cast<int>(options_.margin));
  std::rotate(history_.begin(), history_.begin() + 1, history_.end());
  history_[0] = 0.0;
}

Tensor DelayedScaling::quantize(const Tensor& x) {
  if (x.numel() > 0) {  // nothing to cast records nothing (the amax of no element is 0)
    // A meta run makes the same temporaries, so that it counts them, but has no value to record.
    const Tensor magnitude = x.abs();
    const Tensor amax = magnitude.amax().to(kFloat64);
    if (!x.device().is_meta()) {
      double a = amax.item<double>();
      // Transformer Engine's amax skips NaN elements (fmaxf): a NaN in one tensor must not hold
      // the scale for the whole history. An inf is kept, and keeps the scale, as TE's does.
      if (std::isnan(a)) a = where(eq(x, x), magnitude, zeros({}, magnitude.options())).amax().to(kFloat64).item<double>();
      record_amax(a);
    }
  }
  // Scaled in float32 at least, as TE does, so that the cast rounds once: a bfloat16 product
  // rounded to bfloat16 first can land on a tie that the cast then rounds the wrong way.
  return clamp(x.to(promote_types(x.dtype(), kFloat32)) * scale_, -fp8_max_, fp8_max_).to(dtype_);
}

StateDict DelayedScaling::state_dict() const {
  StateDict s("fp8 scaling state key");
  s.insert("scale", scalar_tensor(scale_, TensorOptions(kFloat64)));
  Tensor h = empty({static_cast<int64_t>(history_.size())}, TensorOptions(kFloat64));
  std::copy(history_.begin(), history_.end(), h.data_ptr<double>());
  s.insert("amax_history", h);
  return s;
}

void DelayedScaling::load_state_dict(const StateDict& state) {
  TALLY_CHECK(state.contains("scale") && state.contains("amax_history") && state.size() == 2,
              "DelayedScaling.load_state_dict: expected the keys scale and amax_history");
  const Tensor h = state.at("amax_history").to(kFloat64).contiguous();
  TALLY_CHECK(h.dim() == 1 && h.numel() == static_cast<int64_t>(history_.size()), "DelayedScaling.load_state_dict: an amax history of shape ",
              h.sizes(), " for a history of length ", history_.size());
  scale_ = state.at("scale").to(kFloat64).item<double>();
  std::copy(h.data_ptr<double>(), h.data_ptr<double>() + h.numel(), history_.begin());
}

}  // namespace tally::amp
