// The CUDA caching allocator. cudaMalloc and cudaFree synchronise the whole device and take tens
// of microseconds, so, as PyTorch does, freed blocks are kept and handed out again.
//
// Note [CUDA caching allocator]
// Requests are rounded to a size class: 512-byte steps up to 1 MiB (small blocks), then 1/8
// steps between powers of two (at most 12.5% slack), so a freed block fits the next request of a
// similar size. A cached block is reused only for a request of the same class on the same stream:
// work queued on that stream runs in order, so the next user's kernels start after the last
// user's have finished, with no synchronisation. tally queues everything on one stream per
// device today; the stream is part of the key so that adding streams cannot break that rule.
// memory_allocated counts the bytes storages asked for (exactly the tensors' bytes);
// memory_reserved counts the rounded blocks taken from the driver, cached ones included.

#include <cuda_runtime.h>

#include <map>
#include <mutex>
#include <tuple>
#include <vector>

#include "tally/cuda/runtime.h"
#include "tally/cuda/runtime_internal.h"
#include "tally/error/error.h"

namespace tally::cuda {

namespace {

int64_t block_class(int64_t nbytes) {
  if (nbytes <= 0) return 512;
  if (nbytes <= (int64_t{1} << 20)) return (nbytes + 511) / 512 * 512;
  const int64_t pow2 = int64_t{1} << (63 - __builtin_clzll(static_cast<uint64_t>(nbytes)));
  const int64_t step = pow2 / 8;
  return (nbytes + step - 1) / step * step;
}

struct DeviceState {
  std::mutex mu;
  // (stream, class) -> cached blocks of that class
  std::map<std::pair<cudaStream_t, int64_t>, std::vector<void*>> free_blocks;
  MemoryStats stats;
};

constexpr int kMaxDevices = 64;

DeviceState& state(int device) {
  TALLY_CHECK_TYPE(DeviceError, device >= 0 && device < kMaxDevices, "invalid CUDA device index ", device);
  static DeviceState* states = new DeviceState[kMaxDevices];  // never destroyed: storages may outlive statics
  return states[device];
}

void release_cache(DeviceState& s) {
  for (auto& [key, blocks] : s.free_blocks) {
    for (void* p : blocks) {
      cudaFree(p);
      s.stats.reserved_bytes -= key.second;
      s.stats.cached_bytes -= key.second;
    }
  }
  s.free_blocks.clear();
}

}  // namespace

namespace detail {

void* allocate(int64_t nbytes, MemoryCategory category, int device) {
  TALLY_CHECK_TYPE(DeviceError, device < device_count(), "cannot allocate on cuda:", device, ": ",
                   device_count() == 0 ? std::string("no CUDA GPU is available on this machine")
                                       : "this machine has " + std::to_string(device_count()) + " GPU(s)");
  DeviceGuard guard(device);
  DeviceState& s = state(device);
  const int64_t cls = block_class(nbytes);
  cudaStream_t stream = current_stream(device);
  std::lock_guard lock(s.mu);
  void* p = nullptr;
  auto it = s.free_blocks.find({stream, cls});
  if (it != s.free_blocks.end() && !it->second.empty()) {
    p = it->second.back();
    it->second.pop_back();
    s.stats.cached_bytes -= cls;
  } else {
    cudaError_t err = cudaMalloc(&p, static_cast<size_t>(cls));
    if (err == cudaErrorMemoryAllocation) {
      cudaGetLastError();  // clear the sticky-free error state before retrying
      release_cache(s);
      err = cudaMalloc(&p, static_cast<size_t>(cls));
    }
    if (err != cudaSuccess) {
      cudaGetLastError();
      size_t free_bytes = 0, total_bytes = 0;
      cudaMemGetInfo(&free_bytes, &total_bytes);
      throw OutOfMemoryError(::tally::detail::str_cat(
          "CUDA out of memory. Tried to allocate ", describe_bytes(nbytes), ". GPU ", device, " has a total capacity of ",
          describe_bytes(static_cast<int64_t>(total_bytes)), " of which ", describe_bytes(static_cast<int64_t>(free_bytes)),
          " is free; tally holds ", describe_bytes(s.stats.total_allocated_bytes), " in live tensors and ",
          describe_bytes(s.stats.reserved_bytes), " reserved (", cudaGetErrorString(err), ")"));
    }
    ++s.stats.num_os_allocs;
    s.stats.reserved_bytes += cls;
    s.stats.peak_reserved_bytes = std::max(s.stats.peak_reserved_bytes, s.stats.reserved_bytes);
  }
  ++s.stats.num_allocs;
  s.stats.add_live(nbytes, category);
  return p;
}

void deallocate(void* ptr, int64_t nbytes, MemoryCategory category, int device) {
  if (!ptr) return;
  DeviceState& s = state(device);
  const int64_t cls = block_class(nbytes);
  std::lock_guard lock(s.mu);
  s.free_blocks[{current_stream(device), cls}].push_back(ptr);
  s.stats.cached_bytes += cls;
  s.stats.remove_live(nbytes, category);
}

void recategorize(int64_t nbytes, MemoryCategory from, MemoryCategory to, int device) {
  DeviceState& s = state(device);
  std::lock_guard lock(s.mu);
  s.stats.remove_live(nbytes, from);
  s.stats.add_live(nbytes, to);
}

}  // namespace detail

MemoryStats memory_stats(int device) {
  DeviceState& s = state(device);
  std::lock_guard lock(s.mu);
  return s.stats;
}
int64_t memory_allocated(int device) { return memory_stats(device).total_allocated_bytes; }
int64_t max_memory_allocated(int device) { return memory_stats(device).peak_total_allocated_bytes; }
int64_t memory_reserved(int device) { return memory_stats(device).reserved_bytes; }

void reset_peak_memory_stats(int device) {
  DeviceState& s = state(device);
  std::lock_guard lock(s.mu);
  s.stats.reset_peaks();
}

void merge_peak_memory_stats(const MemoryStats& earlier, int device) {
  DeviceState& s = state(device);
  std::lock_guard lock(s.mu);
  s.stats.merge_peaks(earlier);
}

void empty_cache() {
  for (int d = 0; d < device_count(); ++d) {
    DeviceGuard guard(d);
    DeviceState& s = state(d);
    std::lock_guard lock(s.mu);
    release_cache(s);
  }
}

}  // namespace tally::cuda
