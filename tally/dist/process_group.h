#pragma once
// Process groups: the ranks of a job and the collectives between them (torch.distributed's
// ProcessGroup). Two backends: one process (world size 1: every collective leaves its tensors as
// they are, and no MPI runtime is needed) and MPI (tally/dist/mpi). A backend provides blocking
// primitives that move bytes and a queue that runs them in order; the collectives are built
// here, once, from those, so a backend for GPUs (NCCL) adds primitives, not algorithms.
//
// Every collective is asynchronous: it returns a Work to wait on, and collectives complete in the
// order they were started, which must be the same on every rank. When the caller has waited, the
// collective is a row on the calling thread's ledger: the bytes this rank sent and received by the
// bandwidth-optimal algorithm's count (comm_cost.h), the additions it did, and its time from
// start to end. Tensors are contiguous and on the CPU; one that lives on a GPU is copied to host
// memory by the caller, where the ledger shows the copy.

#include <chrono>
#include <condition_variable>
#include <exception>
#include <functional>
#include <memory>
#include <mutex>
#include <string>

#include "tally/core/tensor.h"
#include "tally/ops/cost.h"

namespace tally::dist {

/// A collective in flight (torch's c10d Work).
class Work {
 public:
  Work(std::string name, ops::Cost cost);
  Work(const Work&) = delete;
  Work& operator=(const Work&) = delete;
  /// Block until the collective has finished on this rank; rethrows its error (DistError). The
  /// first wait puts it on the calling thread's ledger.
  void wait();
  /// Whether it has finished (wait() would not block).
  bool is_completed() const;
  /// Its time from when it started running (after the collectives queued before it) to its end,
  /// once completed.
  double seconds() const;
  const ops::Cost& cost() const { return cost_; }
  const std::string& name() const { return name_; }

  /// For backends: run `task` now as this collective, and mark it completed (with its error, if it threw).
  void run(const std::function<void()>& task);

 private:
  std::string name_;
  ops::Cost cost_;
  mutable std::mutex mutex_;
  std::condition_variable done_cv_;
  bool done_ = false;
  bool recorded_ = false;
  std::exception_ptr error_;
  double seconds_ = 0;
};

/// The ranks of one job, and the collectives among them.
class ProcessGroup {
 public:
  virtual ~ProcessGroup() = default;
  ProcessGroup(const ProcessGroup&) = delete;
  ProcessGroup& operator=(const ProcessGroup&) = delete;

  /// This process's rank, 0 … size() − 1.
  int rank() const { return rank_; }
  /// The number of ranks.
  int size() const { return size_; }
  /// "single" or "mpi".
  virtual std::string backend() const = 0;

  /// Every rank's `tensor` summed, in place, by the backend's algorithm: reproducible at a fixed
  /// world size, but not equal to a sum in another order. Dtypes the backend cannot add
  /// (float16, bfloat16 under MPI) are summed as allreduce_ordered does.
  std::shared_ptr<Work> allreduce(const Tensor& tensor);
  /// The same sum taken in rank order, ((t₀ + t₁) + t₂) + …, whatever the backend's algorithm:
  /// bit-identical to adding the ranks' tensors one after another in one process with tally's
  /// add_. An all-to-all, the additions on each rank's slice, then an all-gather: the bytes of a
  /// bandwidth-optimal all-reduce (on `tensor` padded to a multiple of size()).
  std::shared_ptr<Work> allreduce_ordered(const Tensor& tensor);
  /// `output` (n elements) = the sum over ranks, in rank order, of each rank's slice `rank()` of
  /// `input` (size()·n elements). With `accumulate`, the slices are added to `output` in rank
  /// order, (((out + s₀) + s₁) + …): gradient accumulation over micro-steps and ranks in one order.
  std::shared_ptr<Work> reduce_scatter(const Tensor& output, const Tensor& input, bool accumulate = false);
  /// `output` (size()·n elements) = every rank's `input` (n elements), in rank order.
  std::shared_ptr<Work> allgather(const Tensor& output, const Tensor& input);
  /// `output`'s slice r = rank r's slice rank() of `input` (both size()·n elements).
  std::shared_ptr<Work> alltoall(const Tensor& output, const Tensor& input);
  /// Rank `root`'s `tensor` into every rank's.
  std::shared_ptr<Work> broadcast(const Tensor& tensor, int root = 0);
  /// Completes once every rank has reached it.
  std::shared_ptr<Work> barrier();
  /// End every rank of the job now with exit status `code`: what a failing rank does, so that no
  /// other rank waits on it in a collective (MPI_Abort; std::exit in one process).
  [[noreturn]] virtual void abort(int code) = 0;

 protected:
  ProcessGroup(int rank, int size);

  /// Run `task` on the backend's thread after every task queued before it; `work` completes when
  /// it returns. One process runs it at once.
  virtual void enqueue(std::shared_ptr<Work> work, std::function<void()> task) = 0;
  // Blocking primitives, called from tasks only. Counts are in bytes unless named otherwise.
  /// Whether allreduce_sum_now can add `dtype`.
  virtual bool can_sum(Dtype dtype) const = 0;
  virtual void allreduce_sum_now(void* data, int64_t numel, Dtype dtype) = 0;
  virtual void alltoall_now(const void* in, void* out, int64_t bytes_per_rank) = 0;
  virtual void allgather_now(const void* in, void* out, int64_t bytes_per_rank) = 0;
  virtual void broadcast_now(void* data, int64_t bytes, int root) = 0;
  virtual void barrier_now() = 0;

 private:
  std::shared_ptr<Work> start(std::string name, ops::Cost cost, std::function<void()> task);
  int rank_;
  int size_;
};

/// A group of one process: every collective leaves its tensors as a one-rank job would (the
/// all-gather and all-to-all copy input to output), and moves no bytes.
std::unique_ptr<ProcessGroup> make_single_process_group();
/// The MPI world of this process (MPI_COMM_WORLD, duplicated), initialising MPI. DistError when
/// tally was built without MPI (Open MPI's libopenmpi-dev was not found by CMake).
std::unique_ptr<ProcessGroup> make_mpi_process_group();
/// Whether this process was started by mpirun (Open MPI's environment names its rank).
bool launched_by_mpirun();
/// The job's ranks on this machine (Open MPI's local size; 1 outside mpirun): they share its cores.
int local_world_size();

/// The job's process group, made on first use: MPI's when the process was started by mpirun,
/// else one process. It lives until the process exits.
ProcessGroup& world();

}  // namespace tally::dist
