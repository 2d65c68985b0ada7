#include "tally/dist/grad_reducer.h"

#include <algorithm>
#include <chrono>

#include "tally/accounting/memory_tracker.h"
#include "tally/core/autograd_meta.h"
#include "tally/dist/comm_cost.h"
#include "tally/error/error.h"
#include "tally/ops/creation.h"

namespace tally::dist {

GradReducer::GradReducer(std::vector<Tensor> params, ProcessGroup& group, ReducerOptions options)
    : params_(std::move(params)), group_(group), options_(options) {
  TALLY_CHECK(options_.bucket_cap_bytes > 0, "GradReducer: bucket_cap_bytes must be positive (got ", options_.bucket_cap_bytes, ")");
  const int p = group_.size();
  where_.resize(params_.size());
  // Note [Buckets]: reverse registration order, one dtype per bucket, at most the cap (a larger
  // parameter has a bucket of its own).
  int64_t bytes = 0;
  for (size_t k = params_.size(); k-- > 0;) {
    const Tensor& w = params_[k];
    TALLY_CHECK(w.requires_grad() && w.is_leaf(), "GradReducer: parameter ", k, " (shape ", w.sizes(),
                ") is not a leaf that requires gradients");
    const int64_t w_bytes = w.numel() * w.element_size();
    if (buckets_.empty() || buckets_.back().dtype != w.dtype() || (bytes > 0 && bytes + w_bytes > options_.bucket_cap_bytes)) {
      buckets_.emplace_back();
      buckets_.back().dtype = w.dtype();
      bytes = 0;
    }
    Bucket& b = buckets_.back();
    where_[k] = {buckets_.size() - 1, b.params.size()};
    b.params.push_back(k);
    b.offsets.push_back(b.numel);
    b.numel += w.numel();
    bytes += w_bytes;
  }
  for (Bucket& b : buckets_) {
    b.numel = slice_numel(b.numel, p) * p;
    b.flat = zeros({b.numel}, TensorOptions().dtype(b.dtype));
    accounting::set_memory_category(b.flat, MemoryCategory::Gradients);
    if (options_.mode == ReduceMode::Ordered) {
      b.slice_sum = zeros({b.numel / p}, TensorOptions().dtype(b.dtype));
      accounting::set_memory_category(b.slice_sum, MemoryCategory::Gradients);
    }
    b.ready.assign(b.params.size(), false);
    b.pending = b.params.size();
  }
  for (size_t k = 0; k < params_.size(); ++k)
    hooks_.push_back(params_[k].register_post_accumulate_grad_hook([this, k](const Tensor& leaf) { on_gradient(k, leaf); }));
}

GradReducer::~GradReducer() {
  for (size_t k = 0; k < params_.size(); ++k) params_[k].remove_post_accumulate_grad_hook(hooks_[k]);
}

void GradReducer::prepare_for_backward(bool first, bool last) {
  first_ = first;
  last_ = last;
  if (first) stats_ = {};
}

void GradReducer::on_gradient(size_t param, const Tensor& leaf) {
  // Fast: the micro-steps before the last accumulate in grad(), as one process does.
  if (options_.mode == ReduceMode::Fast && !last_) return;
  auto [bi, j] = where_[param];
  Bucket& b = buckets_[bi];
  TALLY_CHECK(b.works.empty() && !b.ready[j], "GradReducer: parameter ", param, "'s gradient arrived twice in one backward, or after its bucket ",
              "was sent (a second backward before finalize_backward?)");
  b.flat.narrow(0, b.offsets[j], leaf.numel()).copy_(leaf.grad().reshape({-1}));
  // Ordered: the sum so far lives in the buckets (Note [Ordered reduction]); the next micro-step
  // starts grad() afresh.
  if (options_.mode == ReduceMode::Ordered) Tensor(leaf).set_grad(Tensor());
  b.ready[j] = true;
  if (--b.pending == 0) launch_ready();
}

void GradReducer::launch_ready() {
  while (next_launch_ < buckets_.size() && buckets_[next_launch_].pending == 0) launch(buckets_[next_launch_++]);
}

void GradReducer::launch(Bucket& b) {
  for (size_t j = 0; j < b.params.size(); ++j)  // a parameter backward did not reach adds nothing
    if (!b.ready[j]) b.flat.narrow(0, b.offsets[j], params_[b.params[j]].numel()).zero_();
  if (options_.mode == ReduceMode::Fast) {
    b.works.push_back(group_.allreduce(b.flat));
    return;
  }
  b.works.push_back(group_.reduce_scatter(b.slice_sum, b.flat, /*accumulate=*/!first_));
  if (last_) b.works.push_back(group_.allgather(b.flat, b.slice_sum));
}

void GradReducer::finalize_backward() {
  const bool communicates = options_.mode == ReduceMode::Ordered || last_;
  if (communicates) {
    for (Bucket& b : buckets_) b.pending = 0;  // whatever did not arrive is sent as zeros
    launch_ready();
    // The gradient sync belongs to backward on the ledger (its rows, and the adds it caused).
    autograd::BackwardPhaseGuard phase;
    const auto t0 = std::chrono::steady_clock::now();
    for (Bucket& b : buckets_)
      for (const auto& w : b.works) w->wait();
    stats_.exposed_seconds += std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  }
  for (Bucket& b : buckets_) {
    for (const auto& w : b.works) {
      stats_.bytes_sent += w->cost().bytes_sent;
      stats_.comm_seconds += w->seconds();
      ++stats_.collectives;
    }
    if (communicates && last_) {
      for (size_t j = 0; j < b.params.size(); ++j) {
        Tensor& w = params_[b.params[j]];
        w.set_grad(b.flat.narrow(0, b.offsets[j], w.numel()).view(w.sizes()));
      }
    }
    b.works.clear();
    b.ready.assign(b.params.size(), false);
    b.pending = b.params.size();
  }
  next_launch_ = 0;
}

int64_t GradReducer::largest_bucket_numel() const {
  int64_t n = 0;
  for (const Bucket& b : buckets_) n = std::max(n, b.numel);
  return n;
}

}  // namespace tally::dist
