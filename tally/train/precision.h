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

#include <functional>
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
  /// What one training step did.
  struct StepResult {
    Tensor loss;       ///< the forward's loss (unscaled)
    double grad_norm;  ///< the total gradient norm before clipping (of the unscaled gradients)
    bool stepped;      ///< false: the loss scaler skipped the update (inf or NaN gradients)
  };
  /// One training step, the same for the run and for anything timed against it: `loss_fn` (the
  /// forward) under the precision's autocast; backward on the loss, scaled where a loss scaler
  /// runs; with `inject_inf`, an inf in the first gradient (testing the scaler); the gradients
  /// unscaled and clipped to total norm `grad_clip` (0: not clipped); the optimizer step unless
  /// the scaler skips it, then the scaler's update; zero_grad.
  StepResult run(const std::function<Tensor()>& loss_fn, optim::Optimizer& optimizer, double grad_clip, bool inject_inf = false);
  /// run() in parts, for gradient accumulation: a micro-step's forward and its backward on the
  /// loss × `loss_factor` (1/micro-batches; 1 multiplies nothing), returning the unscaled loss…
  Tensor micro_step(const std::function<Tensor()>& loss_fn, double loss_factor = 1.0);
  /// …and after the step's micro-steps, the update: what run() does after backward. The gradients
  /// clipped are those of `clipped` (the optimizer's parameters when empty: ZeRO-1's optimizer
  /// holds shards, and the norm is the model's).
  struct UpdateResult {
    double grad_norm;
    bool stepped;
  };
  UpdateResult update(optim::Optimizer& optimizer, double grad_clip, bool inject_inf = false, const std::vector<Tensor>& clipped = {});
  /// The backward of a step from its (unscaled) loss: scaled first where a loss scaler runs.
  /// run() and the meta-device prediction of a step (step_profile.h) both start it here.
  void backward(const Tensor& loss) const;
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
