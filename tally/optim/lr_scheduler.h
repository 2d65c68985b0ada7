#pragma once
// Learning-rate schedules, as torch.optim.lr_scheduler: each group's base lr is its lr before any
// schedule changed it (initial_lr, which the first schedule records), and a step counter drives
// the rest. A schedule whose lr is a closed form of the step (WarmupCosineLR, as LambdaLR) sets
// it outright; the others, chainable as torch's, scale the lr they find, so that two schedules on
// one optimizer compose and an lr set by hand is kept. A schedule's whole state is its counter,
// base lrs and last lrs; the lrs themselves are the optimizer's state, which a schedule's load
// leaves as they are (as torch's), so chained schedules resume the lr they made together.

#include <cstdint>
#include <functional>
#include <vector>

#include "tally/core/ordered_dict.h"
#include "tally/core/tensor.h"
#include "tally/optim/optimizer.h"

namespace tally::optim {

/// The base of every schedule (libtorch's LRScheduler). Making one sets the lrs of step 0.
class LRScheduler {
 public:
  virtual ~LRScheduler() = default;
  LRScheduler(const LRScheduler&) = delete;
  LRScheduler& operator=(const LRScheduler&) = delete;

  /// Advance one step and set each group's lr (call after optimizer.step()).
  void step();
  /// The lr of each group as last set.
  const std::vector<double>& get_last_lr() const { return last_lr_; }
  /// Steps taken since the schedule was made (PyTorch's last_epoch).
  int64_t last_epoch() const { return last_epoch_; }
  /// `last_epoch` (int64 0-d), `base_lrs` and `last_lr` (float64, one per group).
  StateDict state_dict() const;
  /// Restore state_dict()'s counter, base lrs and last lrs, strictly (a state without last_lr,
  /// as older checkpoints have, takes the optimizer's lrs as the last ones); the optimizer's lrs
  /// are not changed: load the optimizer's own state for them.
  void load_state_dict(const StateDict& state_dict);

 protected:
  /// A schedule over `optimizer`'s groups; the derived constructor calls start() when its own
  /// fields are set.
  explicit LRScheduler(Optimizer& optimizer);
  /// Set the lrs of step 0.
  void start() { apply(); }
  /// The lr at step `step` of a group whose base lr is `base_lr`, this schedule alone.
  virtual double lr_at(double base_lr, int64_t step) const = 0;
  /// The lr at step `step` of a group whose lr is now `lr`: lr_at, unless the schedule is
  /// chainable (torch's get_lr rather than its _get_closed_form_lr).
  virtual double chained_lr(double lr, double base_lr, int64_t step) const {
    (void)lr;
    return lr_at(base_lr, step);
  }

 private:
  /// Set each group's lr for last_epoch_, by chained_lr.
  void apply();
  Optimizer& optimizer_;
  std::vector<double> base_lrs_;
  std::vector<double> last_lr_;
  int64_t last_epoch_ = 0;
};

/// torch.optim.lr_scheduler.ConstantLR: the lr times `factor` at step 0 and divided by it again
/// at step `total_iters` (alone: base_lr · factor for the first `total_iters` steps, then
/// base_lr; with total_iters 0, as torch's, the factor stays); with factor 1, a constant schedule.
class ConstantLR : public LRScheduler {
 public:
  ConstantLR(Optimizer& optimizer, double factor = 1.0 / 3, int64_t total_iters = 5);

 protected:
  double lr_at(double base_lr, int64_t step) const override;
  double chained_lr(double lr, double base_lr, int64_t step) const override;

 private:
  double factor_;
  int64_t total_iters_;
};

/// torch.optim.lr_scheduler.StepLR: the lr times `gamma` every `step_size` steps
/// (alone: base_lr · gamma^⌊step / step_size⌋).
class StepLR : public LRScheduler {
 public:
  StepLR(Optimizer& optimizer, int64_t step_size, double gamma = 0.1);

 protected:
  double lr_at(double base_lr, int64_t step) const override;
  double chained_lr(double lr, double base_lr, int64_t step) const override;

 private:
  int64_t step_size_;
  double gamma_;
};

/// torch.optim.lr_scheduler.MultiStepLR: the lr times `gamma` at each milestone (a milestone
/// given twice multiplies twice; alone: base_lr · gamma^(milestones at or below step)).
class MultiStepLR : public LRScheduler {
 public:
  MultiStepLR(Optimizer& optimizer, std::vector<int64_t> milestones, double gamma = 0.1);

 protected:
  double lr_at(double base_lr, int64_t step) const override;
  double chained_lr(double lr, double base_lr, int64_t step) const override;

 private:
  std::vector<int64_t> milestones_;  // sorted
  double gamma_;
};

/// torch.optim.lr_scheduler.ExponentialLR: the lr times `gamma` every step (alone: base_lr · gamma^step).
class ExponentialLR : public LRScheduler {
 public:
  ExponentialLR(Optimizer& optimizer, double gamma);

 protected:
  double lr_at(double base_lr, int64_t step) const override;
  double chained_lr(double lr, double base_lr, int64_t step) const override;

 private:
  double gamma_;
};

/// torch.optim.lr_scheduler.LinearLR: the factor on the lr goes linearly from `start_factor` at
/// step 0 to `end_factor` at step `total_iters`, then stays (alone: base_lr · (start_factor +
/// (end_factor − start_factor) · min(step, total_iters) / total_iters)).
class LinearLR : public LRScheduler {
 public:
  LinearLR(Optimizer& optimizer, double start_factor = 1.0 / 3, double end_factor = 1.0, int64_t total_iters = 5);

 protected:
  double lr_at(double base_lr, int64_t step) const override;
  double chained_lr(double lr, double base_lr, int64_t step) const override;

 private:
  double start_factor_;
  double end_factor_;
  int64_t total_iters_;
};

/// torch.optim.lr_scheduler.CosineAnnealingLR: the lr follows half a cosine from base_lr down to
/// `eta_min` over `T_max` steps and back up over the next T_max (alone: eta_min + ½(base_lr −
/// eta_min)(1 + cos(π step / T_max))). Chained, it is torch's recursive form, which keeps an lr
/// changed by hand or by another schedule.
class CosineAnnealingLR : public LRScheduler {
 public:
  CosineAnnealingLR(Optimizer& optimizer, int64_t T_max, double eta_min = 0.0);

 protected:
  double lr_at(double base_lr, int64_t step) const override;
  double chained_lr(double lr, double base_lr, int64_t step) const override;

 private:
  int64_t T_max_;
  double eta_min_;
};

/// torch.optim.lr_scheduler.LambdaLR: base_lr · lr_lambda(step), the same function for every
/// group (torch's one-function form). The function is not part of the state.
class LambdaLR : public LRScheduler {
 public:
  LambdaLR(Optimizer& optimizer, std::function<double(int64_t)> lr_lambda);

 protected:
  double lr_at(double base_lr, int64_t step) const override;

 private:
  std::function<double(int64_t)> lr_lambda_;
};

/// Linear warm-up then cosine decay: base_lr · (t + 1) / warmup_steps for t < warmup_steps (the
/// first step at base_lr / warmup_steps, the last of the warm-up at base_lr); min_lr + ½(1 + cos(π (t − warmup_steps) / (total_steps − warmup_steps)))
/// · (base_lr − min_lr) up to total_steps; min_lr after.
class WarmupCosineLR : public LRScheduler {
 public:
  WarmupCosineLR(Optimizer& optimizer, int64_t warmup_steps, int64_t total_steps, double min_lr = 0.0);

 protected:
  double lr_at(double base_lr, int64_t step) const override;

 private:
  int64_t warmup_steps_;
  int64_t total_steps_;
  double min_lr_;
};

}  // namespace tally::optim
