#include "tally/dist/zero.h"

#include <charconv>
#include <string>

#include "tally/accounting/flop_counter.h"
#include "tally/accounting/memory_tracker.h"
#include "tally/core/autograd_meta.h"
#include "tally/error/error.h"
#include "tally/ops/creation.h"

namespace tally::dist {

namespace {

/// "state.<i>.<name>" as (i, name); nothing for another key.
std::optional<std::pair<size_t, std::string>> parse_state_key(const std::string& key) {
  if (!key.starts_with("state.")) return std::nullopt;
  const size_t dot = key.find('.', 6);
  size_t index = 0;
  if (dot == std::string::npos || std::from_chars(key.data() + 6, key.data() + dot, index).ptr != key.data() + dot) return std::nullopt;
  return std::make_pair(index, key.substr(dot + 1));
}

std::string state_key(size_t index, const std::string& name) { return "state." + std::to_string(index) + "." + name; }

/// int64 0, 1, …, n − 1: a param group's parameter indices.
Tensor indices(int64_t n) { return arange(n, TensorOptions().dtype(kInt64)); }

}  // namespace

ZeroShards::ZeroShards(std::vector<Tensor> params, const GradReducer& reducer, ProcessGroup& group)
    : params_(std::move(params)), reducer_(reducer), group_(group) {
  for (const GradReducer::Bucket& b : reducer_.buckets()) {
    TALLY_CHECK_TYPE_ERROR(b.dtype == kFloat32 || b.dtype == kFloat64, "ZeRO-1 shards float32 or float64 parameters (a bucket holds ",
                           dtype_name(b.dtype), " ones)");
    Tensor shard = zeros({b.numel / group_.size()}, TensorOptions().dtype(b.dtype)).requires_grad_();
    accounting::set_memory_category(shard, MemoryCategory::Parameters);  // this rank's copy of its slice of them
    shards_.push_back(shard);
  }
}

template <class F>
void ZeroShards::for_each_overlap(size_t b, F&& f) const {
  const GradReducer::Bucket& bucket = reducer_.buckets()[b];
  const int64_t slice = bucket.numel / group_.size(), lo = group_.rank() * slice, hi = lo + slice;
  for (size_t j = 0; j < bucket.params.size(); ++j) {
    const Tensor& w = params_[bucket.params[j]];
    const int64_t begin = std::max(lo, bucket.offsets[j]), end = std::min(hi, bucket.offsets[j] + w.numel());
    if (begin < end) f(w, begin - bucket.offsets[j], begin - lo, end - begin);
  }
}

void ZeroShards::before_step() {
  NoGradGuard no_grad;
  accounting::OptimizerPhaseGuard phase;
  const int64_t r = group_.rank();
  for (size_t b = 0; b < shards_.size(); ++b) {
    Tensor& shard = shards_[b];
    for_each_overlap(b, [&](const Tensor& w, int64_t in_param, int64_t in_shard, int64_t n) {
      shard.detach().narrow(0, in_shard, n).copy_(w.detach().reshape({-1}).narrow(0, in_param, n));
    });
    const Tensor& flat = reducer_.buckets()[b].flat;
    shard.set_grad(flat.narrow(0, r * shard.numel(), shard.numel()));
  }
}

void ZeroShards::after_step() {
  NoGradGuard no_grad;
  accounting::OptimizerPhaseGuard phase;
  for (Tensor& w : params_) w.set_grad(Tensor());  // views into the buckets, overwritten next
  for (size_t b = 0; b < shards_.size(); ++b) {
    const GradReducer::Bucket& bucket = reducer_.buckets()[b];
    group_.allgather(bucket.flat, shards_[b].detach())->wait();
    for (size_t j = 0; j < bucket.params.size(); ++j) {
      Tensor w = params_[bucket.params[j]].detach();
      w.view({-1}).copy_(bucket.flat.narrow(0, bucket.offsets[j], w.numel()));
    }
  }
}

StateDict ZeroShards::consolidate(const StateDict& sharded) const {
  std::vector<std::vector<std::pair<std::string, Tensor>>> per_param(params_.size());
  StateDict groups("optimizer state key");
  for (const auto& [key, t] : sharded) {
    const auto parsed = parse_state_key(key);
    if (!parsed) {  // param_groups.<g>.*: the same hyper-parameters, over every parameter
      groups.insert(key, key.ends_with(".params") ? indices(static_cast<int64_t>(params_.size())) : t);
      continue;
    }
    const auto& [b, name] = *parsed;
    const GradReducer::Bucket& bucket = reducer_.buckets().at(b);
    Tensor whole = t;  // the step count is every parameter's of the bucket
    if (name != "step") {
      whole = empty({bucket.numel}, TensorOptions().dtype(t.dtype()));
      group_.allgather(whole, t.contiguous())->wait();
    }
    for (size_t j = 0; j < bucket.params.size(); ++j) {
      const Tensor& w = params_[bucket.params[j]];
      per_param[bucket.params[j]].emplace_back(name, name == "step" ? whole : whole.narrow(0, bucket.offsets[j], w.numel()).view(w.sizes()));
    }
  }
  StateDict full("optimizer state key");
  for (size_t i = 0; i < per_param.size(); ++i)
    for (const auto& [name, t] : per_param[i]) full.insert(state_key(i, name), t);
  for (const auto& [key, t] : groups) full.insert(key, t);
  return full;
}

StateDict ZeroShards::shard(const StateDict& full) const {
  StateDict out("optimizer state key");
  const int64_t r = group_.rank();
  for (size_t b = 0; b < shards_.size(); ++b) {
    const GradReducer::Bucket& bucket = reducer_.buckets()[b];
    const size_t first = bucket.params.front();
    const Tensor* step = full.find(state_key(first, "step"));
    if (!step) continue;  // no step taken yet
    out.insert(state_key(b, "step"), *step);
    for (const std::string& key : full.keys()) {
      const auto parsed = parse_state_key(key);
      if (!parsed || parsed->first != first || parsed->second == "step") continue;
      const std::string& name = parsed->second;
      Tensor flat = zeros({bucket.numel}, TensorOptions().dtype(full.at(key).dtype()));
      for (size_t j = 0; j < bucket.params.size(); ++j) {
        const Tensor& saved = full.at(state_key(bucket.params[j], name));
        flat.narrow(0, bucket.offsets[j], saved.numel()).copy_(saved.reshape({-1}));
      }
      out.insert(state_key(b, name), flat.narrow(0, r * shards_[b].numel(), shards_[b].numel()).clone());
    }
  }
  for (const auto& [key, t] : full)
    if (key.starts_with("param_groups."))
      out.insert(key, key.ends_with(".params") ? indices(static_cast<int64_t>(shards_.size())) : t);
  return out;
}

}  // namespace tally::dist
