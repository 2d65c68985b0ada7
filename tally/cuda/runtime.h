#pragma once
// tally::cuda: the GPU as PyTorch's torch.cuda shows it — availability, device properties,
// synchronisation and the caching allocator's byte counts (memory_allocated, memory_reserved,
// empty_cache). In a build without CUDA every query answers "none" (is_available() is false,
// counts are 0) and anything that needs a GPU raises DeviceError.

#include <cstdint>
#include <functional>
#include <string>

#include "tally/core/allocator.h"

namespace tally::cuda {

/// Whether this tally was built with CUDA (torch.backends.cuda.is_built()), GPU or not.
bool is_built();
/// Whether this build has CUDA and the machine has at least one usable GPU.
bool is_available();
/// Number of GPUs (0 without CUDA).
int device_count();
/// Wait until every kernel queued on `device` (-1: the current one) has finished.
void synchronize(int device = -1);

/// What the device is, for `tally info` and the peak table.
struct DeviceProperties {
  std::string name;                 ///< e.g. "NVIDIA H100 80GB HBM3"
  int major = 0, minor = 0;         ///< compute capability
  int multiprocessors = 0;
  int64_t total_memory = 0;         ///< bytes
  int64_t l2_cache_bytes = 0;
  double sm_clock_ghz = 0;          ///< the highest SM clock the driver reports
  double memory_clock_ghz = 0;
  int memory_bus_bits = 0;
};
DeviceProperties get_device_properties(int device = 0);

/// Bytes held by live tensors on `device` (torch.cuda.memory_allocated): exactly the sum of their
/// storages' sizes.
int64_t memory_allocated(int device = 0);
/// Peak of memory_allocated since the last reset (torch.cuda.max_memory_allocated).
int64_t max_memory_allocated(int device = 0);
/// Bytes taken from the driver, live and cached (torch.cuda.memory_reserved).
int64_t memory_reserved(int device = 0);
/// The allocator's counters by category, as CpuAllocator::stats() gives them for the CPU.
MemoryStats memory_stats(int device = 0);
/// Restart the peaks from the current values.
void reset_peak_memory_stats(int device = 0);
/// MemoryStats::merge_peaks on the device's counters.
void merge_peak_memory_stats(const MemoryStats& earlier, int device = 0);
/// Return every cached block to the driver (torch.cuda.empty_cache()).
void empty_cache();

/// Whether float32 matmuls may run on TF32 tensor cores (torch.backends.cuda.matmul.allow_tf32;
/// off by default, as in PyTorch since 1.12).
bool allow_tf32();
void set_allow_tf32(bool allow);

/// Makes `device` current for a scope and restores the previous one (c10::cuda::CUDAGuard).
/// apply() holds one around every op on the GPU, so its kernels launch where its tensors are.
class DeviceGuard {
 public:
  explicit DeviceGuard(int device);
  ~DeviceGuard();
  DeviceGuard(const DeviceGuard&) = delete;
  DeviceGuard& operator=(const DeviceGuard&) = delete;

 private:
  int previous_ = -1;
};

/// Median GPU seconds of one call of `fn` on `device`: a warm-up round of `iters` calls, then
/// `rounds` rounds of `iters` calls, each timed with CUDA events (what bench and `tally bench`
/// quote; host time would measure only the launches).
double time_per_call(int device, const std::function<void()>& fn, int iters, int rounds = 5);

namespace detail {
// Used by the core; each raises DeviceError in a build without CUDA.
void* allocate(int64_t nbytes, MemoryCategory category, int device);
void deallocate(void* ptr, int64_t nbytes, MemoryCategory category, int device);
void recategorize(int64_t nbytes, MemoryCategory from, MemoryCategory to, int device);
/// Copy `nbytes` between any two of host and device memory on the device's stream. With
/// `non_blocking` and pinned host memory the call returns before the copy ends; otherwise it waits.
void copy_bytes(void* dst, bool dst_on_device, const void* src, bool src_on_device, int64_t nbytes, int device,
                bool non_blocking);
/// Page-locked host memory (cudaHostAlloc) and its release.
void* allocate_pinned(int64_t nbytes);
void free_pinned(void* ptr);

/// Times one op on the GPU with a pair of CUDA events (the ledger's clock for GPU ops).
class EventTimer {
 public:
  explicit EventTimer(int device);
  ~EventTimer();
  EventTimer(const EventTimer&) = delete;
  EventTimer& operator=(const EventTimer&) = delete;
  /// Seconds between construction and this call, as the GPU measured them; waits for the GPU.
  double elapsed_seconds();

 private:
  void* start_ = nullptr;
  void* stop_ = nullptr;
  int device_ = 0;
};
}  // namespace detail

}  // namespace tally::cuda
