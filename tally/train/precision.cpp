#include "tally/train/precision.h"

#include <cmath>
#include <limits>

#include "tally/amp/fp8_linear.h"
#include "tally/error/error.h"
#include "tally/ops/elementwise.h"
#include "tally/optim/clip_grad.h"

namespace tally::train {

StepPrecision::StepPrecision(const TrainConfig& config, nn::Module& model) : model_(model) {
  const std::string& p = config.precision;
  if (p == "bf16" || p == "fp8" || p == "bf16-params") autocast_ = kBFloat16;
  // No float32 master weights: the parameters themselves in bfloat16, written by the optimizer with
  // stochastic rounding over float32 state (Note [Stochastic rounding] in optim/fused.h).
  if (p == "bf16-params") model.to(kBFloat16);
  if (p == "fp16") {
    autocast_ = kFloat16;
    scaler_.emplace();
  }
  if (p == "fp8") {
    fp8_ = true;
    TALLY_CHECK(amp::convert_to_fp8(model) > 0, "precision fp8: the model has no Linear layer to run in FP8");
  }
  TALLY_CHECK(p == "fp32" || autocast_, "unknown precision '", p, "' (expected fp32, bf16, bf16-params, fp16 or fp8)");
}

StepPrecision::StepResult StepPrecision::run(const std::function<Tensor()>& loss_fn, optim::Optimizer& optimizer, double grad_clip,
                                              bool inject_inf) {
  Tensor loss = micro_step(loss_fn);
  const auto [grad_norm, stepped] = update(optimizer, grad_clip, inject_inf);
  return {loss, grad_norm, stepped};
}

Tensor StepPrecision::micro_step(const std::function<Tensor()>& loss_fn, double loss_factor) {
  Tensor loss = forward(loss_fn);
  backward(loss_factor == 1.0 ? loss : loss * loss_factor);
  return loss;
}

StepPrecision::UpdateResult StepPrecision::update(optim::Optimizer& optimizer, double grad_clip, bool inject_inf,
                                                  const std::vector<Tensor>& clipped) {
  UpdateResult r;
  const std::vector<Tensor> params = clipped.empty() ? optimizer.parameters() : clipped;
  if (inject_inf) params.at(0).grad().view({-1}).narrow(0, 0, 1).fill_(INFINITY);
  if (scaler_) scaler_->unscale_(optimizer);  // clipping sees the true gradients
  r.grad_norm = nn::utils::clip_grad_norm_(params, grad_clip > 0 ? grad_clip : std::numeric_limits<double>::infinity());
  if (scaler_) {
    r.stepped = scaler_->step(optimizer);
    scaler_->update();
  } else {
    optimizer.step();
    r.stepped = true;
  }
  optimizer.zero_grad();
  return r;
}

void StepPrecision::backward(const Tensor& loss) const { (scaler_ ? scaler_->scale(loss) : loss).backward(); }

std::optional<double> StepPrecision::loss_scale() const {
  if (scaler_) return scaler_->get_scale();
  return std::nullopt;
}

StateDict StepPrecision::state_dict() const {
  StateDict s("precision state key");
  if (scaler_)
    for (const auto& [k, t] : scaler_->state_dict()) s.insert("scaler." + k, t);
  if (fp8_)
    for (const auto& [k, t] : amp::fp8_state_dict(model_)) s.insert("fp8." + k, t);
  return s;
}

void StepPrecision::load_state_dict(const StateDict& state) {
  const StateDict scaler = with_prefix_removed(state, "scaler."), fp8 = with_prefix_removed(state, "fp8.");
  TALLY_CHECK(scaler.size() + fp8.size() == state.size(), "precision state: unexpected keys besides scaler.* and fp8.*");
  TALLY_CHECK(scaler.empty() || scaler_, "precision state: a loss scaler's state, but this run has no loss scaler");
  TALLY_CHECK(fp8.empty() || fp8_, "precision state: FP8 scales, but this run has no FP8 layers");
  if (scaler_) scaler_->load_state_dict(scaler);
  if (fp8_) amp::load_fp8_state_dict(model_, fp8);
}

}  // namespace tally::train
