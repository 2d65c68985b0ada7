#pragma once
// Thread-local free lists for the small objects every op creates and drops: tensor and storage
// headers, graph nodes, autograd slots.
//
// Note [Object pools]
// A recorded op on a tiny tensor allocates about six such objects, and a graph is freed all at
// once after backward. That burst overflows glibc's per-thread cache (7 blocks per size), so
// the next ops' allocations took malloc's slow path and cost more than the op's arithmetic. Here
// each thread keeps up to kMaxPooledPerClass freed blocks per 16-byte size class and hands them
// out again. A block freed on another thread joins that thread's list, which is harmless: blocks
// are plain malloc memory. Under AddressSanitizer pooling is off, so use-after-free stays visible.

#include <cstddef>
#include <memory>
#include <utility>

namespace tally::detail {

/// Largest object the pools keep; bigger ones go straight to malloc.
inline constexpr size_t kMaxPooledBytes = 512;

/// `bytes` from the calling thread's pool (malloc when the pool is empty or bytes is large).
void* pool_allocate(size_t bytes);
/// Return a block from pool_allocate with the same size.
void pool_deallocate(void* p, size_t bytes) noexcept;

/// A std allocator over the pools, for allocate_shared and containers of small objects.
template <class T>
struct PoolAllocator {
  using value_type = T;
  PoolAllocator() = default;
  template <class U>
  PoolAllocator(const PoolAllocator<U>&) {}  // NOLINT: rebinding, as std allocators do
  static_assert(alignof(T) <= alignof(std::max_align_t), "pooled objects are malloc-aligned");
  T* allocate(size_t n) { return static_cast<T*>(pool_allocate(n * sizeof(T))); }
  void deallocate(T* p, size_t n) noexcept { pool_deallocate(p, n * sizeof(T)); }
  template <class U>
  bool operator==(const PoolAllocator<U>&) const { return true; }
};

/// std::make_shared with the object and its control block from the pools.
template <class T, class... A>
std::shared_ptr<T> make_pooled(A&&... args) {
  return std::allocate_shared<T>(PoolAllocator<T>{}, std::forward<A>(args)...);
}

}  // namespace tally::detail
