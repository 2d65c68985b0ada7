#pragma once
// ZeRO stage 1 (Rajbhandari et al., 2020): the optimizer's state sharded over the ranks.
//
// Note [ZeRO-1]
// The gradient reducer's buckets lay every parameter out in flat buffers padded to p slices
// (Note [Buckets] in dist/grad_reducer.h); rank r owns slice r of each. Its optimizer runs over one
// shard tensor per bucket, a copy of its slice of the parameters, whose gradient is its slice of
// the summed bucket, so AdamW keeps state for ⌈n/p⌉ elements of each bucket of n, not for all N.
// A step: the gradients summed as without sharding (every rank holds all of them, so that the
// clipping norm is computed as one process computes it, bit for bit); each rank copies its
// slices of the parameters into its shards and steps them (AdamW is elementwise, so an element's
// update does not depend on which tensor it sits in); the shards are all-gathered into the
// buckets' flat buffers (the gradients are no longer needed) and copied into the parameters. The
// all-gather adds (p−1)/p of the parameters' bytes to a step's traffic; a reduce-scatter in place
// of the all-reduce would save as much again, but then no rank has the whole gradient for the
// clipping norm.
// A checkpoint holds the state as one process's optimizer would (consolidate: every rank's
// shards gathered), so a run resumes at any world size, sharded or not; shard() takes a rank's
// slices back out of it.

#include <vector>

#include "tally/core/ordered_dict.h"
#include "tally/dist/grad_reducer.h"
#include "tally/dist/process_group.h"

namespace tally::dist {

class ZeroShards {
 public:
  /// Shards of `params` (the reducer's list, in its order) over the reducer's buckets.
  ZeroShards(std::vector<Tensor> params, const GradReducer& reducer, ProcessGroup& group);

  /// This rank's shard of each bucket: leaf tensors that require gradients, for its optimizer.
  const std::vector<Tensor>& shards() const { return shards_; }
  /// Before the optimizer's step, after backward and the gradients' sum: the shards take the
  /// parameters' current values, and their gradients are their slices of the summed buckets.
  void before_step();
  /// After the optimizer's step: every rank's shards all-gathered into the parameters; the
  /// parameters' gradients (views into the buckets, now overwritten) are cleared.
  void after_step();

  /// The state dict of an optimizer over shards() as the same optimizer over every parameter
  /// would hold it (Note [Optimizer state dict] in optim/optimizer.h). A collective call: every
  /// rank's shards are gathered.
  StateDict consolidate(const StateDict& sharded) const;
  /// This rank's slices of a state dict over every parameter, for the optimizer over shards().
  StateDict shard(const StateDict& full) const;

 private:
  /// f(param, element in the parameter, element in the shard, count) for each parameter's part
  /// that lies in bucket `b`'s shard of this rank.
  template <class F>
  void for_each_overlap(size_t b, F&& f) const;

  std::vector<Tensor> params_;
  const GradReducer& reducer_;
  ProcessGroup& group_;
  std::vector<Tensor> shards_;
};

}  // namespace tally::dist
