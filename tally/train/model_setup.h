#pragma once
// The model, optimizer and schedule a TrainConfig describes, made in one place so that the real
// run and its meta-device prediction are the same program.

#include "tally/nn/transformer.h"
#include "tally/optim/adam.h"
#include "tally/optim/lr_scheduler.h"
#include "tally/train/config.h"

namespace tally::train {

// Note [Weight decay groups]
// As GPT-2, nanoGPT and llm.c train: weight decay on the tensors of two or more dims (the linear
// layers' weights, the embeddings), none on the one-dimensional ones (biases, the norms' gains),
// which decay toward zero would only pull away from the scale they set. decay_all decays every
// tensor (tally before these groups). ZeRO-1's optimizer steps flat shards that cut across
// tensors of both kinds, so it needs decay_all (TrainConfig::validate says so).

/// AdamW over `params` with the config's hyper-parameters, in the decay groups of Note [Weight
/// decay groups]: the tensors of 2+ dims in the first, decayed; the others in the second, not.
inline optim::AdamW make_optimizer(std::vector<Tensor> params, const TrainConfig& c) {
  const auto options = [&](double decay) { return optim::AdamWOptions(c.lr).betas({c.beta1, c.beta2}).eps(c.eps).weight_decay(decay); };
  if (c.decay_all) return optim::AdamW(std::move(params), options(c.weight_decay));
  std::vector<Tensor> decayed, kept;
  for (Tensor& p : params) (p.dim() >= 2 ? decayed : kept).push_back(std::move(p));
  std::vector<optim::OptimizerParamGroup> groups;
  if (!decayed.empty()) groups.emplace_back(std::move(decayed), std::make_unique<optim::AdamWOptions>(options(c.weight_decay)));
  if (!kept.empty()) groups.emplace_back(std::move(kept), std::make_unique<optim::AdamWOptions>(options(0)));
  return optim::AdamW(std::move(groups), options(c.weight_decay));
}

/// The same over every parameter of `model`.
inline optim::AdamW make_optimizer(const nn::Module& model, const TrainConfig& c) { return make_optimizer(model.parameters(), c); }

/// Linear warm-up over warmup_steps, cosine decay to min_lr at the run's last step.
inline optim::WarmupCosineLR make_schedule(optim::Optimizer& optimizer, const TrainConfig& c) {
  return optim::WarmupCosineLR(optimizer, c.warmup_steps, c.steps, c.min_lr);
}

}  // namespace tally::train
