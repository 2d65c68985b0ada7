#include "tally/optim/lr_scheduler.h"

#include <algorithm>
#include <cmath>
#include <numbers>

#include "tally/ops/creation.h"

namespace tally::optim {

LRScheduler::LRScheduler(Optimizer& optimizer) : optimizer_(optimizer) {
  for (OptimizerParamGroup& g : optimizer.param_groups()) {
    if (!g.initial_lr()) g.set_initial_lr(g.options().get_lr());
    base_lrs_.push_back(*g.initial_lr());
  }
}

void LRScheduler::step() {
  ++last_epoch_;
  apply();
}

void LRScheduler::apply() {
  std::vector<OptimizerParamGroup>& groups = optimizer_.param_groups();
  TALLY_CHECK(groups.size() == base_lrs_.size(), "lr scheduler: the optimizer has ", groups.size(),
              " param groups but the schedule was made for ", base_lrs_.size());
  last_lr_.clear();
  for (size_t g = 0; g < groups.size(); ++g) {
    const double lr = groups[g].options().get_lr();
    last_lr_.push_back(chained_lr(lr, base_lrs_[g], last_epoch_));
    groups[g].options().set_lr(last_lr_.back());
  }
}

namespace {
/// v as a float64 tensor of shape [v.size()].
Tensor doubles(const std::vector<double>& v) {
  Tensor t = empty({static_cast<int64_t>(v.size())}, TensorOptions(kFloat64));
  std::copy(v.begin(), v.end(), t.data_ptr<double>());
  return t;
}
}  // namespace

StateDict LRScheduler::state_dict() const {
  StateDict out("lr scheduler state dict key");
  out.insert("last_epoch", scalar_tensor(last_epoch_, TensorOptions(kInt64)));
  out.insert("base_lrs", doubles(base_lrs_));
  out.insert("last_lr", doubles(last_lr_));
  return out;
}

void LRScheduler::load_state_dict(const StateDict& state_dict) {
  const int64_t groups = static_cast<int64_t>(base_lrs_.size());
  for (const auto& [key, value] : state_dict)
    TALLY_CHECK(key == "last_epoch" || key == "base_lrs" || key == "last_lr", "lr scheduler load_state_dict: unexpected key '", key, "'");
  const Tensor* epoch = state_dict.find("last_epoch");
  const Tensor* base = state_dict.find("base_lrs");
  const Tensor* last = state_dict.find("last_lr");  // absent from checkpoints of before it was kept
  TALLY_CHECK(epoch && epoch->dim() == 0 && epoch->dtype() == kInt64,
              "lr scheduler load_state_dict: expected 'last_epoch', an int64 0-d tensor");
  TALLY_CHECK(epoch->item<int64_t>() >= 0, "lr scheduler load_state_dict: 'last_epoch' must be a step count (>= 0), got ",
              epoch->item<int64_t>());
  const auto per_group = [&](const Tensor* t) { return t->dtype() == kFloat64 && t->sizes() == IntArrayRef{groups}; };
  TALLY_CHECK(base && per_group(base), "lr scheduler load_state_dict: expected 'base_lrs', a float64 tensor of shape [", groups, "]");
  TALLY_CHECK(!last || per_group(last), "lr scheduler load_state_dict: expected 'last_lr', a float64 tensor of shape [", groups, "]");
  last_epoch_ = epoch->item<int64_t>();
  const Tensor b = base->contiguous();
  base_lrs_.assign(b.data_ptr<double>(), b.data_ptr<double>() + groups);
  // The optimizer's lrs are its own state, loaded with it: a schedule's load leaves them, as
  // torch's does, so that two chained schedules resume the lr they made together.
  if (last) {
    const Tensor l = last->contiguous();
    last_lr_.assign(l.data_ptr<double>(), l.data_ptr<double>() + groups);
  } else {
    last_lr_.clear();
    for (const OptimizerParamGroup& g : optimizer_.param_groups()) last_lr_.push_back(g.options().get_lr());
  }
}

ConstantLR::ConstantLR(Optimizer& optimizer, double factor, int64_t total_iters)
    : LRScheduler(optimizer), factor_(factor), total_iters_(total_iters) {
  TALLY_CHECK(factor >= 0 && factor <= 1.0, "Constant multiplicative factor expected to be between 0 and 1.");
  start();
}

double ConstantLR::lr_at(double base_lr, int64_t step) const {
  return step < total_iters_ || total_iters_ == 0 ? base_lr * factor_ : base_lr;
}

double ConstantLR::chained_lr(double lr, double base_lr, int64_t step) const {
  if (step == 0) return lr * factor_;
  if (step != total_iters_) return lr;
  return factor_ == 0 ? base_lr : lr * (1.0 / factor_);  // torch divides by zero there; the lr alone is base_lr
}

StepLR::StepLR(Optimizer& optimizer, int64_t step_size, double gamma) : LRScheduler(optimizer), step_size_(step_size), gamma_(gamma) {
  TALLY_CHECK(step_size > 0, "StepLR: step_size must be positive, got ", step_size);
  start();
}

double StepLR::lr_at(double base_lr, int64_t step) const {
  return base_lr * std::pow(gamma_, static_cast<double>(step / step_size_));
}

double StepLR::chained_lr(double lr, double, int64_t step) const {
  return step == 0 || step % step_size_ != 0 ? lr : lr * gamma_;
}

MultiStepLR::MultiStepLR(Optimizer& optimizer, std::vector<int64_t> milestones, double gamma)
    : LRScheduler(optimizer), milestones_(std::move(milestones)), gamma_(gamma) {
  std::sort(milestones_.begin(), milestones_.end());
  start();
}

double MultiStepLR::lr_at(double base_lr, int64_t step) const {
  const auto passed = std::upper_bound(milestones_.begin(), milestones_.end(), step) - milestones_.begin();
  return base_lr * std::pow(gamma_, static_cast<double>(passed));
}

double MultiStepLR::chained_lr(double lr, double, int64_t step) const {
  const auto [first, last] = std::equal_range(milestones_.begin(), milestones_.end(), step);
  return first == last ? lr : lr * std::pow(gamma_, static_cast<double>(last - first));
}

ExponentialLR::ExponentialLR(Optimizer& optimizer, double gamma) : LRScheduler(optimizer), gamma_(gamma) { start(); }

double ExponentialLR::lr_at(double base_lr, int64_t step) const { return base_lr * std::pow(gamma_, static_cast<double>(step)); }

double ExponentialLR::chained_lr(double lr, double, int64_t step) const { return step == 0 ? lr : lr * gamma_; }

LinearLR::LinearLR(Optimizer& optimizer, double start_factor, double end_factor, int64_t total_iters)
    : LRScheduler(optimizer), start_factor_(start_factor), end_factor_(end_factor), total_iters_(total_iters) {
  TALLY_CHECK(start_factor > 0 && start_factor <= 1, "LinearLR: start_factor must be in (0, 1], got ", start_factor);
  TALLY_CHECK(end_factor >= 0 && end_factor <= 1, "LinearLR: end_factor must be in [0, 1], got ", end_factor);
  TALLY_CHECK(total_iters > 0, "LinearLR: total_iters must be positive, got ", total_iters);
  start();
}

double LinearLR::lr_at(double base_lr, int64_t step) const {
  const double done = static_cast<double>(std::min(total_iters_, step));
  return base_lr * (start_factor_ + (end_factor_ - start_factor_) * done / static_cast<double>(total_iters_));
}

double LinearLR::chained_lr(double lr, double, int64_t step) const {
  if (step == 0) return lr * start_factor_;
  if (step > total_iters_) return lr;
  // The factor of step t over that of step t − 1, as torch computes it.
  const double span = end_factor_ - start_factor_;
  return lr * (1.0 + span / (static_cast<double>(total_iters_) * start_factor_ + static_cast<double>(step - 1) * span));
}

CosineAnnealingLR::CosineAnnealingLR(Optimizer& optimizer, int64_t T_max, double eta_min)
    : LRScheduler(optimizer), T_max_(T_max), eta_min_(eta_min) {
  TALLY_CHECK(T_max > 0, "CosineAnnealingLR: T_max must be positive, got ", T_max);
  start();
}

double CosineAnnealingLR::lr_at(double base_lr, int64_t step) const {
  return eta_min_ + (base_lr - eta_min_) * (1 + std::cos(std::numbers::pi * static_cast<double>(step) / static_cast<double>(T_max_))) / 2;
}

double CosineAnnealingLR::chained_lr(double lr, double base_lr, int64_t step) const {
  if (step == 0) return lr;
  const double T = static_cast<double>(T_max_);
  const int64_t period = 2 * T_max_;
  if (((step - 1 - T_max_) % period + period) % period == 0)  // at the trough the ratio below is 0/0 (Python's %)
    return lr + (base_lr - eta_min_) * (1 - std::cos(std::numbers::pi / T)) / 2;
  const double now = 1 + std::cos(std::numbers::pi * static_cast<double>(step) / T);
  const double before = 1 + std::cos(std::numbers::pi * static_cast<double>(step - 1) / T);
  const double ratio = now / before;
  return ratio * (lr - eta_min_) + eta_min_;
}

LambdaLR::LambdaLR(Optimizer& optimizer, std::function<double(int64_t)> lr_lambda)
    : LRScheduler(optimizer), lr_lambda_(std::move(lr_lambda)) {
  TALLY_CHECK(static_cast<bool>(lr_lambda_), "LambdaLR: lr_lambda is empty");
  start();
}

double LambdaLR::lr_at(double base_lr, int64_t step) const { return base_lr * lr_lambda_(step); }

WarmupCosineLR::WarmupCosineLR(Optimizer& optimizer, int64_t warmup_steps, int64_t total_steps, double min_lr)
    : LRScheduler(optimizer), warmup_steps_(warmup_steps), total_steps_(total_steps), min_lr_(min_lr) {
  TALLY_CHECK(warmup_steps >= 0, "WarmupCosineLR: warmup_steps must be non-negative, got ", warmup_steps);
  TALLY_CHECK(total_steps >= warmup_steps, "WarmupCosineLR: total_steps (", total_steps, ") must be at least warmup_steps (",
              warmup_steps, ")");
  TALLY_CHECK(min_lr >= 0, "WarmupCosineLR: min_lr must be non-negative, got ", min_lr);
  start();
}

double WarmupCosineLR::lr_at(double base_lr, int64_t step) const {
  // The first step already learns, at base_lr / warmup_steps (nanoGPT's and llm.c's warm-up); a
  // warm-up from 0 spends its first step computing an update it multiplies by nothing.
  if (step < warmup_steps_) return base_lr * static_cast<double>(step + 1) / static_cast<double>(warmup_steps_);
  if (step >= total_steps_) return min_lr_;
  const double progress = static_cast<double>(step - warmup_steps_) / static_cast<double>(total_steps_ - warmup_steps_);
  return min_lr_ + 0.5 * (1 + std::cos(std::numbers::pi * progress)) * (base_lr - min_lr_);
}

}  // namespace tally::optim
