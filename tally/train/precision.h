#pragma once
// `tally train --precision`: what a step does differently in each precision, in one place for the
// run and its meta-device prediction.
//   fp32  everything float32.
//   bf16  the forward under amp::AutocastGuard(bfloat16): float32 master weights, bfloat16 working
//         copies and activations, float32 gradients and AdamW state.
//   fp16  the same in float16, with amp::GradScaler: the loss scaled for backward, the gradients
//         unscaled before clipping, a step with an inf or NaN gradient skipped.
//   fp8   bf16, with every nn::Linear of the model in FP8 (amp::convert_to_fp8; the tied output
//         head stays bfloat16, as in Transformer Engine's recipes).
//   bf16-params  no master weights: the parameters (and so their gradients) are bfloat16, the
//         AdamW state float32, and each update is written back with stochastic rounding; the
//         forward under the same autocast as bf16.

#include <optional>
#include <string>

#include "tally/amp/autocast.h"
#include "tally/amp/grad_scaler.h"
#include "tally/core/ordered_dict.h"
#include "tally/nn/module.h"
#include "tally/optim/optimizer.h"
#include "tally/train/config.h"

namespace tally::train {

class StepPrecision {
 public:
  /// Sets `model` up for config.precision (fp8 converts its Linear layers). The model must
  /// outlive this object.
  StepPrecision(const TrainConfig& config, nn::Module& model);

  /// f() (a forward returning the loss) under the precision's autocast.
  template <class F>
  Tensor forward(F&& f) const {
    std::optional<amp::AutocastGuard> autocast;
    if (autocast_) autocast.emplace(*autocast_);
    return f();
  }
  /// The loss to call backward() on: scaled when a loss scaler runs.
  Tensor for_backward(const Tensor& loss) const { return scaler_ ? scaler_->scale(loss) : loss; }
  /// Divide the gradients by the loss scale (fp16), so that clipping sees the true ones.
  void unscale(optim::Optimizer& optimizer);
  /// optimizer.step(), unless the loss scaler finds an inf or NaN gradient; then the scaler's
  /// update. Returns whether the optimizer stepped.
  bool step(optim::Optimizer& optimizer);
  /// The loss scale the step ran with (fp16), else nullopt.
  std::optional<double> loss_scale() const;
  /// The low-precision dtype of the forward, if any.
  std::optional<Dtype> autocast_dtype() const { return autocast_; }

  /// "scaler.*" (fp16) and "fp8.*" (fp8): what a checkpoint adds to the model and optimizer.
  StateDict state_dict() const;
  /// Restore state_dict(), strictly.
  void load_state_dict(const StateDict& state);

 private:
  nn::Module& model_;
  std::optional<Dtype> autocast_;
  std::optional<amp::GradScaler> scaler_;
  bool fp8_ = false;
};

}  // namespace tally::train
