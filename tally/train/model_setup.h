#pragma once
// The model, optimizer and schedule a TrainConfig describes, made in one place so that the real
// run and its meta-device prediction are the same program.

#include "tally/nn/transformer.h"
#include "tally/optim/adam.h"
#include "tally/optim/lr_scheduler.h"
#include "tally/train/config.h"

namespace tally::train {

/// AdamW over `params` with the config's hyper-parameters.
inline optim::AdamW make_optimizer(std::vector<Tensor> params, const TrainConfig& c) {
  return optim::AdamW(std::move(params), optim::AdamWOptions(c.lr).betas({c.beta1, c.beta2}).eps(c.eps).weight_decay(c.weight_decay));
}

/// AdamW over every parameter of `model` with the config's hyper-parameters.
inline optim::AdamW make_optimizer(const nn::Module& model, const TrainConfig& c) { return make_optimizer(model.parameters(), c); }

/// Linear warm-up over warmup_steps, cosine decay to min_lr at the run's last step.
inline optim::WarmupCosineLR make_schedule(optim::Optimizer& optimizer, const TrainConfig& c) {
  return optim::WarmupCosineLR(optimizer, c.warmup_steps, c.steps, c.min_lr);
}

}  // namespace tally::train
