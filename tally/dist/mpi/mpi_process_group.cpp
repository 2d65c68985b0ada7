// The MPI backend: Open MPI under mpirun.
//
// Note [One thread talks to MPI]
// Collectives run on one thread per process, the group's, in the order they were started: the
// caller queues them and goes on (the backward pass goes on while a bucket's gradients are being
// summed), and MPI is only ever called from that thread once it has started, so MPI needs
// MPI_THREAD_SERIALIZED, not MPI_THREAD_MULTIPLE. The thread's blocking calls are what makes
// progress: Open MPI moves a non-blocking collective's bytes only while some MPI call runs, so
// queued blocking calls on a thread of their own overlap with the computation where non-blocking
// ones started from the computing thread would mostly wait for its next MPI call. Open MPI polls
// while it waits; it is asked to yield the core when idle (OMPI_MCA_mpi_yield_when_idle, unless the
// user set it), since that core is the computing thread's. The thread's own additions (an ordered
// sum's) run single-threaded: the computing thread's OpenMP team keeps the cores.

#include <mpi.h>
#include <omp.h>

#include <climits>
#include <cstdlib>
#include <deque>
#include <thread>

#include "tally/dist/process_group.h"
#include "tally/error/error.h"

namespace tally::dist {

namespace {

/// DistError for an MPI call that did not succeed, with MPI's words.
void check_mpi(int rc, const char* call) {
  if (rc == MPI_SUCCESS) return;
  char text[MPI_MAX_ERROR_STRING];
  int length = 0;
  MPI_Error_string(rc, text, &length);
  throw DistError(detail::str_cat(call, " failed: ", std::string(text, static_cast<size_t>(length))));
}

/// MPI's count argument is an int.
int mpi_count(int64_t n, const char* call) {
  TALLY_CHECK_TYPE(DistError, n >= 0 && n <= INT_MAX, call, ": ", n, " items in one call is more than MPI's int count holds (", INT_MAX,
                   "): split the tensor");
  return static_cast<int>(n);
}

class MpiProcessGroup final : public ProcessGroup {
 public:
  MpiProcessGroup(MPI_Comm comm, int rank, int size) : ProcessGroup(rank, size), comm_(comm), thread_([this] { serve(); }) {}
  ~MpiProcessGroup() override {
    {
      std::lock_guard lock(mutex_);
      stopping_ = true;
    }
    queued_cv_.notify_all();
    thread_.join();
    MPI_Comm_free(&comm_);
    MPI_Finalize();
  }
  std::string backend() const override { return "mpi"; }
  [[noreturn]] void abort(int code) override {
    MPI_Abort(MPI_COMM_WORLD, code);
    std::_Exit(code);  // MPI_Abort does not return; if it did, end anyway
  }

 protected:
  void enqueue(std::shared_ptr<Work> work, std::function<void()> task) override {
    {
      std::lock_guard lock(mutex_);
      TALLY_CHECK_TYPE(DistError, !stopping_, "a collective was started while the MPI process group was shutting down");
      queue_.emplace_back(std::move(work), std::move(task));
    }
    queued_cv_.notify_one();
  }
  bool can_sum(Dtype dtype) const override { return datatype(dtype) != MPI_DATATYPE_NULL; }
  void allreduce_sum_now(void* data, int64_t numel, Dtype dtype) override {
    check_mpi(MPI_Allreduce(MPI_IN_PLACE, data, mpi_count(numel, "MPI_Allreduce"), datatype(dtype), MPI_SUM, comm_), "MPI_Allreduce");
  }
  void alltoall_now(const void* in, void* out, int64_t bytes) override {
    const int n = mpi_count(bytes, "MPI_Alltoall");
    check_mpi(MPI_Alltoall(in, n, MPI_BYTE, out, n, MPI_BYTE, comm_), "MPI_Alltoall");
  }
  void allgather_now(const void* in, void* out, int64_t bytes) override {
    const int n = mpi_count(bytes, "MPI_Allgather");
    check_mpi(MPI_Allgather(in, n, MPI_BYTE, out, n, MPI_BYTE, comm_), "MPI_Allgather");
  }
  void broadcast_now(void* data, int64_t bytes, int root) override {
    check_mpi(MPI_Bcast(data, mpi_count(bytes, "MPI_Bcast"), MPI_BYTE, root, comm_), "MPI_Bcast");
  }
  void barrier_now() override { check_mpi(MPI_Barrier(comm_), "MPI_Barrier"); }

 private:
  /// The MPI datatype MPI_SUM adds for `dtype`; MPI_DATATYPE_NULL for the 16-bit floats and the
  /// float8s, which MPI has no type for.
  static MPI_Datatype datatype(Dtype dtype) {
    switch (dtype) {
      case kFloat32: return MPI_FLOAT;
      case kFloat64: return MPI_DOUBLE;
      case kInt64: return MPI_INT64_T;
      case kInt32: return MPI_INT32_T;
      case kInt16: return MPI_INT16_T;
      case kInt8: return MPI_INT8_T;
      case kUInt8: return MPI_UINT8_T;
      default: return MPI_DATATYPE_NULL;
    }
  }

  void serve() {
    omp_set_num_threads(1);  // Note [One thread talks to MPI]
    for (;;) {
      std::pair<std::shared_ptr<Work>, std::function<void()>> next;
      {
        std::unique_lock lock(mutex_);
        queued_cv_.wait(lock, [&] { return stopping_ || !queue_.empty(); });
        if (queue_.empty()) return;  // stopping, with nothing left to run
        next = std::move(queue_.front());
        queue_.pop_front();
      }
      next.first->run(next.second);
    }
  }

  MPI_Comm comm_;
  std::mutex mutex_;
  std::condition_variable queued_cv_;
  std::deque<std::pair<std::shared_ptr<Work>, std::function<void()>>> queue_;
  bool stopping_ = false;
  std::thread thread_;  // last: it starts once everything above is made
};

}  // namespace

std::unique_ptr<ProcessGroup> make_mpi_process_group() {
  setenv("OMPI_MCA_mpi_yield_when_idle", "1", /*overwrite=*/0);  // Note [One thread talks to MPI]
  int initialised = 0;
  MPI_Initialized(&initialised);
  TALLY_CHECK_TYPE(DistError, !initialised, "MPI is initialised already: tally's MPI process group is made once per process (dist::world())");
  int provided = 0;
  check_mpi(MPI_Init_thread(nullptr, nullptr, MPI_THREAD_SERIALIZED, &provided), "MPI_Init_thread");
  if (provided < MPI_THREAD_SERIALIZED) {
    MPI_Finalize();
    throw DistError("this MPI library does not support calls from a thread other than the main one (MPI_THREAD_SERIALIZED)");
  }
  MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);  // errors become DistError, not an abort without a word
  MPI_Comm comm = MPI_COMM_NULL;
  check_mpi(MPI_Comm_dup(MPI_COMM_WORLD, &comm), "MPI_Comm_dup");
  MPI_Comm_set_errhandler(comm, MPI_ERRORS_RETURN);
  int rank = 0, size = 1;
  MPI_Comm_rank(comm, &rank);
  MPI_Comm_size(comm, &size);
  return std::make_unique<MpiProcessGroup>(comm, rank, size);
}

}  // namespace tally::dist
