#pragma once
// The CPU caching allocator and the byte counters behind tally's memory accounting.
//
// Note [Caching allocator]
// PyTorch on CPU returns every large buffer to the OS and page-faults a fresh one on the next op,
// which makes a memory-bound op several times slower than its bandwidth allows. tally keeps freed
// large blocks in size classes and hands them out again. Two numbers are therefore reported, as
// PyTorch does for CUDA: bytes *allocated* (held by live storages, by category) and bytes
// *reserved* (taken from the OS, including the cache).

#include <array>
#include <atomic>
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

namespace tally {

/// What a storage holds, for the memory tracker's breakdown.
/// WorkingCopies: the low-precision copies of float32 parameters (master weights) that mixed
/// precision computes with (amp::AutocastGuard's cast cache, FP8 layers' quantized weights).
/// KVCache: the keys and values incremental decoding keeps per layer (nn::KVCache).
enum class MemoryCategory : uint8_t { Parameters, WorkingCopies, Gradients, OptimizerState, Activations, KVCache, Other };
inline constexpr int kNumMemoryCategories = 7;
/// "parameters", "working_copies", "gradients", "optimizer_state", "activations", "kv_cache", "other".
std::string_view memory_category_name(MemoryCategory c);

/// "37.25 GiB (40000000000 bytes)": a size in the unit a reader thinks in, and exactly (for
/// out-of-memory messages).
std::string describe_bytes(int64_t nbytes);

/// Counters read by accounting::MemoryTracker. All values in bytes.
struct MemoryStats {
  std::array<int64_t, kNumMemoryCategories> allocated_bytes{};       ///< live, by category
  std::array<int64_t, kNumMemoryCategories> peak_allocated_bytes{};  ///< since the last reset
  int64_t total_allocated_bytes = 0;
  int64_t peak_total_allocated_bytes = 0;
  int64_t reserved_bytes = 0;       ///< taken from the OS and not yet returned (live + cached)
  int64_t peak_reserved_bytes = 0;
  int64_t cached_bytes = 0;         ///< reserved but free, waiting for reuse
  int64_t num_allocs = 0;           ///< allocations requested
  int64_t num_os_allocs = 0;        ///< of which went to the OS (cache misses)

  /// `nbytes` more live bytes of `category`; the peaks follow.
  void add_live(int64_t nbytes, MemoryCategory category);
  /// `nbytes` fewer live bytes of `category`.
  void remove_live(int64_t nbytes, MemoryCategory category);
  /// Restart the peaks from the current values.
  void reset_peaks();
  /// Raise each peak to `earlier`'s where that is higher: the peaks of a window that an inner
  /// tracker's reset cut short (Note [Nested trackers] in accounting/memory_tracker.h).
  void merge_peaks(const MemoryStats& earlier);
};

/// The meta device's byte counters: a meta storage counts its bytes here as a CPU or GPU storage
/// counts them in its allocator, but nothing is allocated, so a run on meta tensors predicts
/// the live and peak bytes by category of the same run on real ones. Thread-safe.
namespace meta_memory {
void allocate(int64_t nbytes, MemoryCategory category);
void deallocate(int64_t nbytes, MemoryCategory category);
void recategorize(int64_t nbytes, MemoryCategory from, MemoryCategory to);
MemoryStats stats();
void reset_peak_stats();
/// MemoryStats::merge_peaks on the meta device's counters.
void merge_peak_stats(const MemoryStats& earlier);
}  // namespace meta_memory

/// Process-wide CPU allocator with a cache of freed blocks. Thread-safe. A request takes the
/// block of its size class freed last: the one most likely still in cache.
class CpuAllocator {
 public:
  /// The one allocator all storages use.
  static CpuAllocator& get();

  /// A 64-byte aligned block of at least `nbytes`, accounted to `category`. Pages are not touched.
  void* allocate(int64_t nbytes, MemoryCategory category);
  /// Give back a block from allocate() with the same size and category.
  void deallocate(void* ptr, int64_t nbytes, MemoryCategory category);
  /// Move `nbytes` of live memory from one category to another (a tensor becomes a parameter).
  void recategorize(int64_t nbytes, MemoryCategory from, MemoryCategory to);

  /// A snapshot of the counters.
  MemoryStats stats() const;
  /// Restart the peaks from the current values.
  void reset_peak_stats();
  /// MemoryStats::merge_peaks on the counters.
  void merge_peak_stats(const MemoryStats& earlier);
  /// Return every cached block to the OS (torch.cuda.empty_cache()).
  void empty_cache();
  /// Largest number of free bytes kept for reuse; beyond it, freed blocks go back to the OS.
  void set_cache_limit(int64_t bytes);

 private:
  CpuAllocator() = default;
  void note_allocated(int64_t nbytes, MemoryCategory category);
  /// Raises OutOfMemoryError for a request of `nbytes` the OS refused.
  [[noreturn]] void out_of_memory(int64_t nbytes) const;
};

}  // namespace tally
