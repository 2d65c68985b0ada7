#pragma once
// Whether a run fits in the memory this process may use, decided before it allocates anything.
//
// Note [Memory pre-check]
// A run whose allocations are each small enough but whose total is not gets no error from the
// allocator: the kernel's OOM killer ends it with SIGKILL and no word. tally knows the run's
// peak before it starts: a training step on the meta device tracks every tensor's bytes by
// category exactly as the real step does (predict_step). The run needs, beyond what the process
// holds when it checks:
//   - its tensors at their highest: the step's tracked peak, or, after the last step, what stays
//     (parameters, their working copies, gradients, optimizer state) plus the books' own work —
//     the bandwidth probe's three arrays and, for a mixed-precision run, the float32 comparison's
//     step on a fresh model — whichever is higher;
//   - the caching allocator's rounding of each block up to its size class, at most 1/8 of a large
//     block (core/allocator.cpp), taken in full;
//   - the process's own growth: a stack and a malloc arena per thread, and a fixed margin for the
//     heap and the batches.
// That is compared with the tightest bound on what the process may still take
// (machine::memory_bounds: MemAvailable, each memory cgroup's limit, RLIMIT_AS). A run that does
// not fit is refused with both figures and what would fit, before a file is written;
// --no-memory-check skips the check.

#include <cstdint>
#include <string>
#include <vector>

#include "tally/machine/memory_limits.h"
#include "tally/train/config.h"

namespace tally::train {

/// What a run of a config needs on top of what the process holds before it starts, in bytes.
struct MemoryNeed {
  int64_t tensor_bytes = 0;     ///< the highest the run's live tensors reach (predicted)
  int64_t allocator_bytes = 0;  ///< the allocator's size classes above that
  int64_t process_bytes = 0;    ///< thread stacks, malloc arenas, heap and batches
  /// Everything together.
  int64_t total() const { return tensor_bytes + allocator_bytes + process_bytes; }
};

/// The need of a run of `config` on `threads` threads (Note [Memory pre-check]).
MemoryNeed predict_memory_need(const TrainConfig& config, int threads);

/// Raises OutOfMemoryError, in one line naming the predicted need, the available bytes and their
/// bound, and what would fit (the largest batch size, or bf16 autocast), unless a run of
/// `config` fits the tightest of `bounds`. `processes`: the runs on this machine checking at once
/// (a data-parallel job's ranks here), each of which gets its share of a bound they share. No
/// bounds: nothing to check against.
void check_memory_fits(const TrainConfig& config, int threads, const std::vector<machine::MemoryBound>& bounds, int processes = 1);

}  // namespace tally::train
