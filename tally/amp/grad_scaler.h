#pragma once
// Loss scaling for float16 training, PyTorch's torch.cuda.amp.GradScaler on tally's devices:
// multiply the loss by a scale so that small float16 gradients do not flush to zero, divide the
// gradients by it before the optimizer sees them, and skip a step whose gradients hold an inf or
// a NaN (the scale was too big) while halving the scale; after `growth_interval` steps in a row
// without one, double it. The algorithm, the defaults and the errors follow PyTorch 1.13
// (grad_scaler.py and its _amp_update_scale_ kernel), and the state is a StateDict a checkpoint
// stores.
//
//   amp::GradScaler scaler;
//   scaler.scale(loss).backward();
//   scaler.unscale_(optimizer);                 // optional: to clip the true gradients
//   nn::utils::clip_grad_norm_(params, 1.0);
//   if (scaler.step(optimizer)) schedule.step(); // false: skipped (inf/NaN), no step counted
//   scaler.update();

#include <cstdint>
#include <map>

#include "tally/core/ordered_dict.h"
#include "tally/core/tensor.h"
#include "tally/optim/optimizer.h"

namespace tally::amp {

struct GradScalerOptions {
  double init_scale = 65536.0;  ///< 2^16
  double growth_factor = 2.0;
  double backoff_factor = 0.5;
  int64_t growth_interval = 2000;
  bool enabled = true;  ///< when false every call passes through (scale 1, step always taken)
};

class GradScaler {
 public:
  /// ValueError for a growth factor <= 1, a backoff factor outside (0, 1), a growth interval < 1
  /// or a scale that is not positive and finite.
  explicit GradScaler(GradScalerOptions options = {});

  /// loss × scale (a ledger op), to call backward() on. A float16 or bfloat16 loss is scaled in
  /// float32, as PyTorch's float32 scale tensor promotes it: 65536 × a float16 loss of 1 would be inf.
  Tensor scale(const Tensor& loss) const;
  /// Divide the gradients of `optimizer`'s parameters by the scale in place, and record whether
  /// any of them holds an inf or a NaN. ValueError when called twice for one optimizer before
  /// update(), or after step().
  void unscale_(optim::Optimizer& optimizer);
  /// unscale_ (unless done), then optimizer.step() unless a gradient was not finite. Returns
  /// whether the step was taken (a skipped step advances neither the optimizer's step counts nor,
  /// if the caller follows the return value, the schedule). ValueError when called twice for one
  /// optimizer before update(), or when none of its parameters has a gradient (PyTorch's "No inf
  /// checks were recorded for this optimizer.").
  bool step(optim::Optimizer& optimizer);
  /// The new scale from this iteration's checks: backoff_factor × scale if any optimizer saw an
  /// inf or NaN (and the run of good steps restarts), else growth_factor × scale once
  /// growth_interval good steps have run (kept only if finite). ValueError when no optimizer was
  /// unscaled since the last update, or none had a gradient to check.
  void update();
  /// Set the scale to `new_scale` instead (PyTorch's update(new_scale)); the growth tracker is
  /// kept. ValueError unless it is positive and finite.
  void update(double new_scale);

  /// The current scale (1 when disabled).
  double get_scale() const;
  /// Good steps in a row since the scale last changed.
  int64_t growth_tracker() const { return growth_tracker_; }
  bool is_enabled() const { return options_.enabled; }

  /// "scale" (float32), "growth_factor", "backoff_factor" (float64), "growth_interval",
  /// "growth_tracker" (int64): 0-d tensors a checkpoint stores.
  StateDict state_dict() const;
  /// Restore state_dict(), strictly (a missing or unexpected key is a ValueError naming it).
  void load_state_dict(const StateDict& state);

 private:
  enum class Stage { Ready, Unscaled, Stepped };
  struct PerOptimizer {
    Stage stage = Stage::Ready;
    bool found_inf = false;
    bool checked = false;  ///< at least one gradient was checked
  };

  GradScalerOptions options_;
  float scale_;  ///< float32, as PyTorch's scale tensor
  int64_t growth_tracker_ = 0;
  std::map<const optim::Optimizer*, PerOptimizer> per_optimizer_;
};

}  // namespace tally::amp
