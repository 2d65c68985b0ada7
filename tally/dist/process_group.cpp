#include "tally/dist/process_group.h"

#include <cstdlib>
#include <cstring>

#include "tally/core/autograd_meta.h"
#include "tally/dist/comm_cost.h"
#include "tally/error/error.h"
#include "tally/ops/creation.h"

namespace tally::dist {

Work::Work(std::string name, ops::Cost cost) : name_(std::move(name)), cost_(cost) {}

void Work::run(const std::function<void()>& task) {
  const auto start = std::chrono::steady_clock::now();  // its own time: not the wait behind collectives queued before it
  // The task's own ops (a reduction's additions) are this collective's cost, recorded once when
  // it is waited for: not rows of whatever ledger the running thread has.
  std::exception_ptr error;
  {
    const ops::OpObserverScope off_the_ledger(nullptr);
    NoGradGuard no_grad;
    try {
      task();
    } catch (...) {
      error = std::current_exception();
    }
  }
  std::lock_guard lock(mutex_);
  seconds_ = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  error_ = error;
  done_ = true;
  done_cv_.notify_all();
}

void Work::wait() {
  std::unique_lock lock(mutex_);
  done_cv_.wait(lock, [&] { return done_; });
  if (!recorded_) {
    recorded_ = true;
    lock.unlock();
    ops::record_op(name_, cost_, seconds_);
    lock.lock();
  }
  if (error_) std::rethrow_exception(error_);
}

bool Work::is_completed() const {
  std::lock_guard lock(mutex_);
  return done_;
}

double Work::seconds() const {
  std::lock_guard lock(mutex_);
  return seconds_;
}

namespace {

/// A collective's tensor: contiguous, on the CPU, with bytes (nothing is moved through a view).
void check_buffer(const Tensor& t, const char* op, const char* what) {
  TALLY_CHECK(t.defined(), op, ": the ", what, " tensor is undefined");
  TALLY_CHECK(t.device().is_cpu(), op, ": the ", what, " tensor is on ", t.device().str(),
              ": collectives take CPU tensors (copy a GPU tensor to the host first)");
  TALLY_CHECK(t.is_contiguous(), op, ": the ", what, " tensor (shape ", t.sizes(), ", strides ", t.strides(),
              ") is not contiguous: collectives move a tensor's bytes as they lie");
}

/// `output` holds size × `input`'s elements, of its dtype.
void check_scattered(const Tensor& big, const Tensor& small, int size, const char* op, const char* big_name, const char* small_name) {
  check_buffer(big, op, big_name);
  check_buffer(small, op, small_name);
  TALLY_CHECK_TYPE_ERROR(big.dtype() == small.dtype(), op, ": the ", big_name, " is ", dtype_name(big.dtype()), " and the ", small_name,
                         " is ", dtype_name(small.dtype()));
  TALLY_CHECK(big.numel() == small.numel() * size, op, ": the ", big_name, " (shape ", big.sizes(), ") must hold world size ", size,
              " × the ", small_name, "'s ", small.numel(), " elements (shape ", small.sizes(), ")");
}

/// `out` (one slice) = the p slices of `received` added in rank order, after `out`'s own value
/// when accumulating (Note [Ordered reduction] in dist/grad_reducer.h).
void add_in_rank_order(Tensor out, const Tensor& received, int p, bool accumulate) {
  const int64_t slice = out.numel();
  for (int r = 0; r < p; ++r) {
    const Tensor part = received.narrow(0, r * slice, slice);
    if (r == 0 && !accumulate) out.copy_(part);
    else out.add_(part);
  }
}

}  // namespace

ProcessGroup::ProcessGroup(int rank, int size) : rank_(rank), size_(size) {
  TALLY_CHECK(size >= 1 && rank >= 0 && rank < size, "a process group of ", size, " ranks cannot have rank ", rank);
}

std::shared_ptr<Work> ProcessGroup::start(std::string name, ops::Cost cost, std::function<void()> task) {
  auto work = std::make_shared<Work>(std::move(name), cost);
  enqueue(work, std::move(task));
  return work;
}

// The collectives below call the backend's primitives at every world size: one process's
// primitives are a one-rank job's (a copy, or nothing), so no collective has a case of its own.

std::shared_ptr<Work> ProcessGroup::allreduce(const Tensor& tensor) {
  check_buffer(tensor, "allreduce", "");
  if (!can_sum(tensor.dtype())) return allreduce_ordered(tensor);
  return start("all_reduce", allreduce_cost(tensor.numel(), tensor.element_size(), size()),
               [this, tensor] { allreduce_sum_now(tensor.data_ptr(), tensor.numel(), tensor.dtype()); });
}

std::shared_ptr<Work> ProcessGroup::allreduce_ordered(const Tensor& tensor) {
  check_buffer(tensor, "allreduce_ordered", "");
  const int p = size();
  return start("all_reduce_ordered", allreduce_cost(tensor.numel(), tensor.element_size(), p), [this, tensor, p] {
    const int64_t n = tensor.numel(), slice = slice_numel(n, p), bytes = slice * tensor.element_size();
    Tensor flat = tensor.view({-1});
    Tensor padded = flat;  // p whole slices
    if (slice * p != n) {
      padded = zeros({slice * p}, TensorOptions().dtype(tensor.dtype()));
      padded.narrow(0, 0, n).copy_(flat);
    }
    const Tensor received = empty({slice * p}, TensorOptions().dtype(tensor.dtype()));
    alltoall_now(padded.data_ptr(), received.data_ptr(), bytes);
    const Tensor sum = empty({slice}, TensorOptions().dtype(tensor.dtype()));
    add_in_rank_order(sum, received, p, /*accumulate=*/false);
    allgather_now(sum.data_ptr(), padded.data_ptr(), bytes);
    if (!padded.is_same(flat)) flat.copy_(padded.narrow(0, 0, n));
  });
}

std::shared_ptr<Work> ProcessGroup::reduce_scatter(const Tensor& output, const Tensor& input, bool accumulate) {
  check_scattered(input, output, size(), "reduce_scatter", "input", "output");
  const int p = size();
  return start("reduce_scatter", reduce_scatter_cost(input.numel(), input.element_size(), p), [this, output, input, p, accumulate] {
    const Tensor received = empty({input.numel()}, TensorOptions().dtype(input.dtype()));
    alltoall_now(input.data_ptr(), received.data_ptr(), output.nbytes());
    add_in_rank_order(output.view({-1}), received, p, accumulate);
  });
}

std::shared_ptr<Work> ProcessGroup::allgather(const Tensor& output, const Tensor& input) {
  check_scattered(output, input, size(), "allgather", "output", "input");
  return start("all_gather", gather_cost(output.numel(), output.element_size(), size()),
               [this, output, input] { allgather_now(input.data_ptr(), output.data_ptr(), input.nbytes()); });
}

std::shared_ptr<Work> ProcessGroup::alltoall(const Tensor& output, const Tensor& input) {
  check_buffer(output, "alltoall", "output");
  check_buffer(input, "alltoall", "input");
  const int p = size();
  TALLY_CHECK(output.dtype() == input.dtype() && output.numel() == input.numel() && input.numel() % p == 0, "alltoall: the input (",
              dtype_name(input.dtype()), ", shape ", input.sizes(), ") and output (", dtype_name(output.dtype()), ", shape ",
              output.sizes(), ") must have one dtype and the same number of elements, a multiple of world size ", p);
  return start("all_to_all", gather_cost(input.numel(), input.element_size(), p),
               [this, output, input, p] { alltoall_now(input.data_ptr(), output.data_ptr(), input.nbytes() / p); });
}

std::shared_ptr<Work> ProcessGroup::broadcast(const Tensor& tensor, int root) {
  check_buffer(tensor, "broadcast", "");
  TALLY_CHECK(root >= 0 && root < size(), "broadcast: root ", root, " is not a rank of this group of ", size());
  return start("broadcast", broadcast_cost(tensor.nbytes(), size()),
               [this, tensor, root] { broadcast_now(tensor.data_ptr(), tensor.nbytes(), root); });
}

std::shared_ptr<Work> ProcessGroup::barrier() {
  return start("barrier", {}, [this] { barrier_now(); });
}

namespace {

/// World size 1: tasks run at once, on the caller's thread, and move nothing.
class SingleProcessGroup final : public ProcessGroup {
 public:
  SingleProcessGroup() : ProcessGroup(0, 1) {}
  std::string backend() const override { return "single"; }
  [[noreturn]] void abort(int code) override { std::exit(code); }

 protected:
  void enqueue(std::shared_ptr<Work> work, std::function<void()> task) override { work->run(task); }
  bool can_sum(Dtype) const override { return true; }
  void allreduce_sum_now(void*, int64_t, Dtype) override {}
  void alltoall_now(const void* in, void* out, int64_t bytes) override { copy(in, out, bytes); }
  void allgather_now(const void* in, void* out, int64_t bytes) override { copy(in, out, bytes); }
  void broadcast_now(void*, int64_t, int) override {}
  void barrier_now() override {}

 private:
  static void copy(const void* in, void* out, int64_t bytes) {
    if (in != out) std::memcpy(out, in, static_cast<size_t>(bytes));
  }
};

}  // namespace

std::unique_ptr<ProcessGroup> make_single_process_group() { return std::make_unique<SingleProcessGroup>(); }

bool launched_by_mpirun() { return std::getenv("OMPI_COMM_WORLD_SIZE") != nullptr; }

int local_world_size() {
  const char* text = std::getenv("OMPI_COMM_WORLD_LOCAL_SIZE");
  const int n = text ? std::atoi(text) : 1;
  return n >= 1 ? n : 1;
}

ProcessGroup& world() {
  static const std::unique_ptr<ProcessGroup> group = launched_by_mpirun() ? make_mpi_process_group() : make_single_process_group();
  return *group;
}

}  // namespace tally::dist
