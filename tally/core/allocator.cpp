#include "tally/core/allocator.h"

#include <sys/mman.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <iterator>
#include <map>
#include <mutex>
#include <new>
#include <vector>

#include "tally/error/error.h"

namespace tally {

std::string_view memory_category_name(MemoryCategory c) {
  switch (c) {
    case MemoryCategory::Parameters: return "parameters";
    case MemoryCategory::WorkingCopies: return "working_copies";
    case MemoryCategory::Gradients: return "gradients";
    case MemoryCategory::OptimizerState: return "optimizer_state";
    case MemoryCategory::Activations: return "activations";
    case MemoryCategory::KVCache: return "kv_cache";
    case MemoryCategory::Other: return "other";
  }
  return "unknown";
}

std::string describe_bytes(int64_t nbytes) {
  char text[64];
  std::snprintf(text, sizeof text, "%.2f GiB (%lld bytes)", static_cast<double>(nbytes) / (1 << 30),
                static_cast<long long>(nbytes));
  return text;
}

namespace {

// Blocks above the largest small class (7/8 of this) are mmapped; smaller ones come from
// aligned_alloc.
constexpr int64_t kLargeBlockBytes = int64_t{1} << 20;

// Small blocks are cached too, in classes of 4 steps per power of two (at most 25% slack), every
// class a multiple of 64 bytes because aligned_alloc(64, n) requires n to be one (glibc tolerates
// other sizes, ASan and the standard do not): 64, 128, 192, 256, 320, ... An op on a tiny tensor
// would otherwise spend more in aligned_alloc/free (glibc's slow memalign path) than in its kernel.
// The largest class is 7/8 MiB; anything bigger goes to the large path.
constexpr int64_t kLargestSmallClass = kLargeBlockBytes / 8 * 7;
constexpr int kSmallClasses = 14 * 4;  // 14 powers of two (64 B .. 512 KiB) x 4 steps

bool is_small(int64_t nbytes) { return nbytes <= kLargestSmallClass; }
int64_t small_class_bytes(int64_t nbytes) {
  nbytes = std::max<int64_t>(nbytes, 64);
  const int64_t pow2 = int64_t{1} << (63 - __builtin_clzll(static_cast<uint64_t>(nbytes)));
  const int64_t step = std::max<int64_t>(pow2 / 4, 64);
  return (nbytes + step - 1) / step * step;
}
int small_class_index(int64_t cls) {  // cls from small_class_bytes
  const int log2 = 63 - __builtin_clzll(static_cast<uint64_t>(cls));
  return (log2 - 6) * 4 + static_cast<int>(cls / ((int64_t{1} << log2) / 4)) - 4;
}
static_assert(kLargestSmallClass % 64 == 0);

// Large requests are rounded up to a size class (1/8 steps between powers of two, so at most
// 12.5% slack) so that a freed block fits the next request of a similar size.
int64_t size_class(int64_t nbytes) {
  int64_t pow2 = int64_t{1} << (63 - __builtin_clzll(static_cast<uint64_t>(nbytes)));
  int64_t step = std::max<int64_t>(pow2 / 8, 4096);
  return (nbytes + step - 1) / step * step;
}

struct State {
  std::mutex mu;
  std::multimap<int64_t, void*> free_blocks;  // size class -> cached block
  std::array<std::vector<void*>, kSmallClasses> free_small;  // per small class, cached blocks
  MemoryStats stats;
  int64_t cache_limit = int64_t{8} << 30;
};

State& state() {
  static State* s = new State();  // never destroyed: storages may outlive static destructors
  return *s;
}

void bump_peak(int64_t value, int64_t& peak) { peak = std::max(peak, value); }

}  // namespace

void MemoryStats::add_live(int64_t nbytes, MemoryCategory category) {
  auto c = static_cast<size_t>(category);
  allocated_bytes[c] += nbytes;
  total_allocated_bytes += nbytes;
  bump_peak(allocated_bytes[c], peak_allocated_bytes[c]);
  bump_peak(total_allocated_bytes, peak_total_allocated_bytes);
}

void MemoryStats::remove_live(int64_t nbytes, MemoryCategory category) {
  allocated_bytes[static_cast<size_t>(category)] -= nbytes;
  total_allocated_bytes -= nbytes;
}

void MemoryStats::reset_peaks() {
  peak_allocated_bytes = allocated_bytes;
  peak_total_allocated_bytes = total_allocated_bytes;
  peak_reserved_bytes = reserved_bytes;
}

void MemoryStats::merge_peaks(const MemoryStats& earlier) {
  for (size_t c = 0; c < peak_allocated_bytes.size(); ++c)
    peak_allocated_bytes[c] = std::max(peak_allocated_bytes[c], earlier.peak_allocated_bytes[c]);
  peak_total_allocated_bytes = std::max(peak_total_allocated_bytes, earlier.peak_total_allocated_bytes);
  peak_reserved_bytes = std::max(peak_reserved_bytes, earlier.peak_reserved_bytes);
}

CpuAllocator& CpuAllocator::get() {
  static CpuAllocator a;
  return a;
}

void CpuAllocator::note_allocated(int64_t nbytes, MemoryCategory category) { state().stats.add_live(nbytes, category); }

void* CpuAllocator::allocate(int64_t nbytes, MemoryCategory category) {
  TALLY_CHECK(nbytes >= 0, "allocate: negative size ", nbytes);
  State& s = state();
  if (is_small(nbytes)) {
    const int64_t cls = small_class_bytes(nbytes);
    {
      std::lock_guard lock(s.mu);
      s.stats.num_allocs++;
      note_allocated(nbytes, category);
      std::vector<void*>& cached = s.free_small[static_cast<size_t>(small_class_index(cls))];
      if (!cached.empty()) {
        void* p = cached.back();
        cached.pop_back();
        s.stats.cached_bytes -= cls;
        return p;
      }
      s.stats.num_os_allocs++;
      s.stats.reserved_bytes += cls;
      bump_peak(s.stats.reserved_bytes, s.stats.peak_reserved_bytes);
    }
    void* p = std::aligned_alloc(64, static_cast<size_t>(cls));  // cls is a multiple of 64
    if (!p) {
      empty_cache();  // the freed blocks this cache keeps may be what the OS is missing
      p = std::aligned_alloc(64, static_cast<size_t>(cls));
    }
    if (!p) {
      {
        std::lock_guard lock(s.mu);
        s.stats.remove_live(nbytes, category);
        s.stats.reserved_bytes -= cls;
      }
      out_of_memory(nbytes);
    }
    return p;
  }
  const int64_t cls = size_class(nbytes);
  {
    std::lock_guard lock(s.mu);
    s.stats.num_allocs++;
    // The block of this class freed last, as the small classes' vectors give: it is the most
    // likely still to be in cache (a multimap's find gives the one freed first).
    if (auto [first, last] = s.free_blocks.equal_range(cls); first != last) {
      const auto it = std::prev(last);
      void* p = it->second;
      s.free_blocks.erase(it);
      s.stats.cached_bytes -= cls;
      note_allocated(nbytes, category);
      return p;
    }
  }
  // mmap gives page-aligned memory whose pages are only faulted in when written: an empty
  // 2304 MiB tensor costs address space, not RAM.
  void* p = mmap(nullptr, static_cast<size_t>(cls), PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  if (p == MAP_FAILED) {
    empty_cache();  // the freed blocks this cache keeps may be what the OS is missing
    p = mmap(nullptr, static_cast<size_t>(cls), PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (p == MAP_FAILED) out_of_memory(nbytes);
  }
  madvise(p, static_cast<size_t>(cls), MADV_HUGEPAGE);
  std::lock_guard lock(s.mu);
  s.stats.num_os_allocs++;
  s.stats.reserved_bytes += cls;
  bump_peak(s.stats.reserved_bytes, s.stats.peak_reserved_bytes);
  note_allocated(nbytes, category);
  return p;
}

void CpuAllocator::out_of_memory(int64_t nbytes) const {
  const MemoryStats st = stats();
  throw OutOfMemoryError(::tally::detail::str_cat(
      "CPU out of memory: tried to allocate ", describe_bytes(nbytes), "; tally holds ",
      describe_bytes(st.total_allocated_bytes), " in live tensors (its cache of freed blocks was returned to the OS first)"));
}

void CpuAllocator::deallocate(void* ptr, int64_t nbytes, MemoryCategory category) {
  if (!ptr) return;
  State& s = state();
  if (is_small(nbytes)) {
    const int64_t cls = small_class_bytes(nbytes);
    {
      std::lock_guard lock(s.mu);
      s.stats.remove_live(nbytes, category);
      if (s.stats.cached_bytes + cls <= s.cache_limit) {
        s.free_small[static_cast<size_t>(small_class_index(cls))].push_back(ptr);
        s.stats.cached_bytes += cls;
        return;
      }
      s.stats.reserved_bytes -= cls;
    }
    std::free(ptr);
    return;
  }
  const int64_t cls = size_class(nbytes);
  bool release = false;
  {
    std::lock_guard lock(s.mu);
    s.stats.remove_live(nbytes, category);
    if (s.stats.cached_bytes + cls <= s.cache_limit) {
      s.free_blocks.emplace(cls, ptr);
      s.stats.cached_bytes += cls;
    } else {
      s.stats.reserved_bytes -= cls;
      release = true;
    }
  }
  if (release) munmap(ptr, static_cast<size_t>(cls));
}

void CpuAllocator::recategorize(int64_t nbytes, MemoryCategory from, MemoryCategory to) {
  if (from == to) return;
  State& s = state();
  std::lock_guard lock(s.mu);
  s.stats.remove_live(nbytes, from);
  s.stats.add_live(nbytes, to);
}

MemoryStats CpuAllocator::stats() const {
  State& s = state();
  std::lock_guard lock(s.mu);
  return s.stats;
}

void CpuAllocator::reset_peak_stats() {
  State& s = state();
  std::lock_guard lock(s.mu);
  s.stats.reset_peaks();
}

void CpuAllocator::merge_peak_stats(const MemoryStats& earlier) {
  State& s = state();
  std::lock_guard lock(s.mu);
  s.stats.merge_peaks(earlier);
}

void CpuAllocator::empty_cache() {
  State& s = state();
  std::multimap<int64_t, void*> blocks;
  std::array<std::vector<void*>, kSmallClasses> small;
  {
    std::lock_guard lock(s.mu);
    blocks.swap(s.free_blocks);
    small.swap(s.free_small);
    s.stats.reserved_bytes -= s.stats.cached_bytes;  // every cached block, large and small
    s.stats.cached_bytes = 0;
  }
  for (auto& [cls, p] : blocks) munmap(p, static_cast<size_t>(cls));
  for (auto& list : small)
    for (void* p : list) std::free(p);
}

void CpuAllocator::set_cache_limit(int64_t bytes) {
  State& s = state();
  {
    std::lock_guard lock(s.mu);
    s.cache_limit = bytes;
  }
  if (bytes == 0) empty_cache();
}

}  // namespace tally
