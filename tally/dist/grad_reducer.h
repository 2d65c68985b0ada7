#pragma once
// Data parallelism's gradient sum (PyTorch DDP's Reducer): every rank runs the same model on its
// own micro-batches, and before each update every rank's gradients are summed over the ranks.
//
// Note [Buckets]
// The parameters are laid out, in reverse order of registration (roughly the order backward
// produces their gradients), in flat buckets of at most `bucket_cap_bytes`, one dtype each; the
// layout is the same on every rank. A post-accumulate-grad hook on each parameter copies its
// gradient into its bucket; when a bucket is full its collective starts, on the process group's
// thread, while backward goes on with the layers below, and buckets start in index order on every
// rank, so their collectives pair up. finalize_backward waits for what is still in flight (the
// exposed communication: what backward did not hide) and points each parameter's grad() at its
// slice of the summed bucket. Each bucket is padded to a whole number of world-size slices.
//
// Note [Ordered reduction]
// ReduceMode::Ordered makes a run on p ranks bit-identical to one process accumulating the same
// micro-batches in one order. One process adds micro-step m's gradient into grad() after micro-step
// m−1's: grad = ((g₀ + g₁) + g₂) + …. With p ranks, micro-step k of rank r holds global micro-batch
// m = k·p + r; each micro-step, every rank reduce-scatters its bucket, adding the ranks' slices in
// rank order into a running sum of its own slice of the bucket (the sum continues over
// micro-steps), and the last micro-step all-gathers those slices: the additions are exactly one
// process's, in its order, with tally's own add_. It communicates on every micro-step of gradient
// accumulation (a reduce-scatter each); ReduceMode::Fast communicates once per step (MPI's
// all-reduce of the locally accumulated gradients), reproducible at a fixed p but not equal to one
// process's sum.

#include <cstdint>
#include <memory>
#include <vector>

#include "tally/dist/process_group.h"

namespace tally::dist {

enum class ReduceMode {
  Fast,     ///< one all-reduce per step, by the backend's algorithm
  Ordered,  ///< rank-ordered sums on every micro-step: bit-identical to one process (Note [Ordered reduction])
};

struct ReducerOptions {
  int64_t bucket_cap_bytes = int64_t{25} << 20;  ///< PyTorch DDP's default, 25 MiB
  ReduceMode mode = ReduceMode::Fast;
};

/// One step's communication on this rank.
struct CommStats {
  int64_t bytes_sent = 0;      ///< by the bandwidth-optimal count (comm_cost.h); as many are received
  int64_t collectives = 0;     ///< how many ran (the α-β model's latency terms, link_model.h)
  double comm_seconds = 0;     ///< the collectives' own time, start to end, summed
  double exposed_seconds = 0;  ///< the time backward's caller waited for them after backward
};

/// Sums the gradients of `params` over `group`'s ranks (Note [Buckets]). Parameters must require
/// gradients. The reducer's hooks stay on the parameters until it is destroyed.
class GradReducer {
 public:
  /// One bucket: its parameters (indices into the reducer's list), where each begins in the flat
  /// layout, and the flat buffer that holds their gradients.
  struct Bucket {
    std::vector<size_t> params;
    std::vector<int64_t> offsets;  // each parameter's first element in `flat`
    std::vector<bool> ready;       // its gradient arrived in this micro-step
    size_t pending = 0;            // parameters still to arrive
    int64_t numel = 0;             // padded to a multiple of the world size
    Dtype dtype = kFloat32;
    Tensor flat;       // the gradients, laid end to end
    Tensor slice_sum;  // Ordered: this rank's slice of the sum so far
    std::vector<std::shared_ptr<Work>> works;  // its collectives in flight: started when not empty
  };

  GradReducer(std::vector<Tensor> params, ProcessGroup& group, ReducerOptions options = {});
  ~GradReducer();
  GradReducer(const GradReducer&) = delete;
  GradReducer& operator=(const GradReducer&) = delete;

  /// Before each micro-step's backward: `first` and `last` say where it stands in the step's
  /// gradient accumulation (both true without accumulation).
  void prepare_for_backward(bool first, bool last);
  /// After that backward: wait for this micro-step's collectives. After the last micro-step every
  /// parameter's grad() is the sum over ranks and micro-steps (a view into its bucket); after the
  /// others, under Ordered, grad() is cleared (its sum so far is in the buckets).
  void finalize_backward();

  /// The communication since the step's first micro-step.
  const CommStats& step_stats() const { return stats_; }
  /// The buckets, in launch order.
  const std::vector<Bucket>& buckets() const { return buckets_; }
  /// The largest bucket's element count (padded).
  int64_t largest_bucket_numel() const;

 private:
  void on_gradient(size_t param, const Tensor& leaf);
  void launch_ready();
  void launch(Bucket& b);

  std::vector<Tensor> params_;
  ProcessGroup& group_;
  ReducerOptions options_;
  std::vector<Bucket> buckets_;
  std::vector<std::pair<size_t, size_t>> where_;  // param -> (bucket, index in bucket)
  std::vector<unsigned> hooks_;
  bool first_ = true, last_ = true;
  size_t next_launch_ = 0;
  CommStats stats_;
};

}  // namespace tally::dist
