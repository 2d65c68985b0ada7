#include "tally/amp/grad_scaler.h"

#include <cmath>

#include "tally/accounting/flop_counter.h"
#include "tally/core/autograd_meta.h"
#include "tally/error/error.h"
#include "tally/ops/apply.h"
#include "tally/ops/creation.h"
#include "tally/ops/elementwise.h"

namespace tally::amp {

namespace {

/// PyTorch's _amp_foreach_non_finite_check_and_unscale_ on one gradient: every element is checked
/// (any inf or NaN sets the flag) and multiplied by inv_scale in place, unless inv_scale is 1.
template <class T>
bool check_and_unscale(T* g, int64_t n, float inv_scale) {
  bool found = false;
  const T inv = static_cast<T>(inv_scale);
#pragma omp parallel for reduction(|| : found) if (n > (int64_t{1} << 16))
  for (int64_t i = 0; i < n; ++i) {
    const T v = g[i];
    found = found || !std::isfinite(v);
    if (inv_scale != 1.0f) g[i] = v * inv;
  }
  return found;
}

}  // namespace

GradScaler::GradScaler(GradScalerOptions options) : options_(options), scale_(static_cast<float>(options.init_scale)) {
  TALLY_CHECK(options.growth_factor > 1.0, "GradScaler: the growth factor must be > 1.0, got ", options.growth_factor);
  TALLY_CHECK(options.backoff_factor > 0.0 && options.backoff_factor < 1.0, "GradScaler: the backoff factor must be in (0, 1), got ",
              options.backoff_factor);
  TALLY_CHECK(options.growth_interval >= 1, "GradScaler: the growth interval must be >= 1, got ", options.growth_interval);
  TALLY_CHECK(std::isfinite(scale_) && scale_ > 0, "GradScaler: the initial scale must be positive and finite, got ", options.init_scale);
}

Tensor GradScaler::scale(const Tensor& loss) const {
  if (!options_.enabled) return loss;
  // In the dtype the loss meets a float32 tensor in: PyTorch's scale is one, so float16 and
  // bfloat16 losses are promoted (float32 and float64 ones stay as they are).
  return loss.to(promote_types(loss.dtype(), kFloat32)) * static_cast<double>(scale_);
}

void GradScaler::unscale_(optim::Optimizer& optimizer) {
  if (!options_.enabled) return;
  PerOptimizer& state = per_optimizer_[&optimizer];
  TALLY_CHECK(state.stage != Stage::Unscaled, "unscale_() has already been called on this optimizer since the last update().");
  TALLY_CHECK(state.stage != Stage::Stepped, "unscale_() is being called after step().");
  // The reciprocal in double, then float32, as PyTorch (float32 division may be imprecise).
  const float inv_scale = static_cast<float>(1.0 / static_cast<double>(scale_));
  NoGradGuard no_grad;
  accounting::OptimizerPhaseGuard phase;
  ops::detail::OpScope row{Device(kCPU)};
  ops::Cost cost;
  bool found = false, checked = false;
  for (optim::OptimizerParamGroup& group : optimizer.param_groups()) {
    for (Tensor& p : group.params()) {
      Tensor g = p.grad();
      if (!g.defined()) continue;
      TALLY_CHECK(g.dtype() != kFloat16, "Attempting to unscale FP16 gradients.");
      TALLY_CHECK_TYPE(TypeError, g.dtype() == kFloat32 || g.dtype() == kFloat64,
                       "GradScaler: gradients must be float32 or float64 (master weights), got ", dtype_name(g.dtype()));
      TALLY_CHECK_TYPE(NotImplementedError, g.device().is_cpu(), "GradScaler: gradients on ", g.device(), " are not supported yet");
      // A gradient laid out otherwise (a view set by hand) is unscaled in a dense copy written back.
      Tensor dense = g.is_contiguous() ? g : g.contiguous();
      if (g.dtype() == kFloat32) found = check_and_unscale(dense.data_ptr<float>(), dense.numel(), inv_scale) || found;
      else found = check_and_unscale(dense.data_ptr<double>(), dense.numel(), inv_scale) || found;
      if (!dense.is_same(g)) g.copy_(dense);
      if (g.storage()) g.storage()->bump_version();
      checked = true;
      // Per element: the finiteness check and the multiply; each gradient read and written once.
      cost += ops::Cost{2 * g.numel(), g.nbytes(), g.nbytes()};
    }
  }
  row.report("amp_unscale", cost);
  state.found_inf = found;
  state.checked = checked;
  state.stage = Stage::Unscaled;
}

bool GradScaler::step(optim::Optimizer& optimizer) {
  if (!options_.enabled) {
    optimizer.step();
    return true;
  }
  PerOptimizer& state = per_optimizer_[&optimizer];
  TALLY_CHECK(state.stage != Stage::Stepped, "step() has already been called since the last update().");
  if (state.stage == Stage::Ready) unscale_(optimizer);  // fills `state` (std::map references stay put)
  TALLY_CHECK(state.checked, "No inf checks were recorded for this optimizer.");
  const bool take = !state.found_inf;
  if (take) optimizer.step();
  state.stage = Stage::Stepped;
  return take;
}

void GradScaler::update() {
  if (!options_.enabled) return;
  bool any_unscaled = false, found_inf = false;
  for (const auto& [opt, s] : per_optimizer_) {
    if (s.stage == Stage::Ready || !s.checked) continue;
    any_unscaled = true;
    found_inf = found_inf || s.found_inf;
  }
  TALLY_CHECK(any_unscaled, "No inf checks were recorded prior to update().");
  // PyTorch's _amp_update_scale_: the products are formed in double and stored as float32.
  if (found_inf) {
    scale_ = static_cast<float>(static_cast<double>(scale_) * options_.backoff_factor);
    growth_tracker_ = 0;
  } else if (growth_tracker_ + 1 == options_.growth_interval) {
    const auto grown = static_cast<float>(static_cast<double>(scale_) * options_.growth_factor);
    if (std::isfinite(grown)) scale_ = grown;
    growth_tracker_ = 0;
  } else {
    ++growth_tracker_;
  }
  per_optimizer_.clear();
}

void GradScaler::update(double new_scale) {
  if (!options_.enabled) return;
  const auto scale = static_cast<float>(new_scale);
  TALLY_CHECK(std::isfinite(scale) && scale > 0, "GradScaler.update: new_scale must be positive and finite (in float32), got ", new_scale);
  scale_ = scale;
  per_optimizer_.clear();
}

double GradScaler::get_scale() const { return options_.enabled ? static_cast<double>(scale_) : 1.0; }

StateDict GradScaler::state_dict() const {
  StateDict s("grad scaler state key");
  s.insert("scale", scalar_tensor(static_cast<double>(scale_), TensorOptions(kFloat32)));
  s.insert("growth_factor", scalar_tensor(options_.growth_factor, TensorOptions(kFloat64)));
  s.insert("backoff_factor", scalar_tensor(options_.backoff_factor, TensorOptions(kFloat64)));
  s.insert("growth_interval", scalar_tensor(options_.growth_interval, TensorOptions(kInt64)));
  s.insert("growth_tracker", scalar_tensor(growth_tracker_, TensorOptions(kInt64)));
  return s;
}

void GradScaler::load_state_dict(const StateDict& state) {
  static const char* kKeys[] = {"scale", "growth_factor", "backoff_factor", "growth_interval", "growth_tracker"};
  for (const char* k : kKeys) TALLY_CHECK(state.contains(k), "GradScaler.load_state_dict: missing key '", k, "'");
  TALLY_CHECK(state.size() == std::size(kKeys), "GradScaler.load_state_dict: expected the keys scale, growth_factor, "
              "backoff_factor, growth_interval, growth_tracker, got ", state.size(), " keys");
  GradScalerOptions o = options_;
  o.init_scale = state.at("scale").item<float>();
  o.growth_factor = state.at("growth_factor").item<double>();
  o.backoff_factor = state.at("backoff_factor").item<double>();
  o.growth_interval = state.at("growth_interval").item<int64_t>();
  GradScaler checked(o);  // the same checks as the constructor, before anything changes
  options_ = o;
  scale_ = checked.scale_;
  growth_tracker_ = state.at("growth_tracker").item<int64_t>();
  per_optimizer_.clear();
}

}  // namespace tally::amp
