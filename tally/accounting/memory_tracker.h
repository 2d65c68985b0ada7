#pragma once
// Memory accounting, the lecture's second question: how many bytes, of which kind, live and at
// peak. Bytes held by live tensors ("allocated") are reported apart from bytes the caching
// allocator holds ("reserved"), as torch.cuda.memory_allocated / memory_reserved do.

#include <string>

#include "tally/core/allocator.h"
#include "tally/core/tensor.h"

namespace tally::accounting {

// Note [Nested trackers]
// The peaks are the process's counters, which a tracker restarts when it is created. A tracker
// made and destroyed inside another's life (a helper that profiles one step) would cut the outer
// one's peaks short; so each tracker keeps the peaks it found and raises the counters back to
// them when it ends. The outer tracker's peak is then the highest over its whole life, the inner
// one's included.

/// A scope over the process's memory counters of one device (the CPU unless given): peaks
/// restart when it is created, and allocated_since_start() measures what the scope added. On the
/// meta device it reports what the same program would hold on a real one (a prediction).
/// Trackers nest (Note [Nested trackers]).
class MemoryTracker {
 public:
  /// Start tracking `device`: remember the current allocation and restart the peaks.
  explicit MemoryTracker(Device device = Device(kCPU));
  /// Give the peaks of an enclosing tracker back (Note [Nested trackers]).
  ~MemoryTracker();
  MemoryTracker(const MemoryTracker&) = delete;
  MemoryTracker& operator=(const MemoryTracker&) = delete;

  /// Live bytes of one category.
  int64_t allocated_bytes(MemoryCategory c) const;
  /// Live bytes of all categories.
  int64_t allocated_bytes() const;
  /// Highest live bytes of one category since the tracker started.
  int64_t peak_allocated_bytes(MemoryCategory c) const;
  /// Highest live bytes in total since the tracker started.
  int64_t peak_allocated_bytes() const;
  /// Bytes taken from the OS: live tensors plus the allocator's cache.
  int64_t reserved_bytes() const;
  /// Highest reserved bytes since the tracker started.
  int64_t peak_reserved_bytes() const;
  /// Live bytes now minus live bytes when the tracker started.
  int64_t allocated_since_start() const;
  /// A table: category, live, peak; then allocated vs reserved.
  [[nodiscard]] std::string report() const;

 private:
  MemoryStats now() const;
  Device device_;
  MemoryStats found_;  ///< the counters when it started: the enclosing window's peaks
  int64_t start_allocated_;
};

/// Account a tensor's storage under `category` (parameters, gradients, ...).
void set_memory_category(const Tensor& t, MemoryCategory category);

/// Bytes held by live tensors now (torch.cuda.memory_allocated).
inline int64_t memory_allocated() { return CpuAllocator::get().stats().total_allocated_bytes; }
/// Bytes taken from the OS now, including the cache (torch.cuda.memory_reserved).
inline int64_t memory_reserved() { return CpuAllocator::get().stats().reserved_bytes; }

/// "2304.0 MiB", "128 B", ... for printing byte counts.
std::string format_bytes(int64_t bytes);

}  // namespace tally::accounting
