#include "tally/core/object_pool.h"

#include <array>
#include <cstdlib>
#include <new>

namespace tally::detail {

namespace {

#if defined(__SANITIZE_ADDRESS__)
constexpr bool kPooling = false;
#else
constexpr bool kPooling = true;
#endif

constexpr size_t kGranule = 16;
constexpr size_t kClasses = kMaxPooledBytes / kGranule;
constexpr int kMaxPooledPerClass = 4096;  // a few MB per thread at most

struct FreeBlock {
  FreeBlock* next;
};

struct Pools {
  std::array<FreeBlock*, kClasses> head{};
  std::array<int, kClasses> count{};
  ~Pools();
};

// Trivially destructible, so it can still be read while (and after) the thread's Pools is
// destroyed: blocks freed that late go back to malloc.
thread_local bool tls_pools_alive = false;
thread_local Pools tls_pools;

Pools::~Pools() {
  tls_pools_alive = false;
  for (FreeBlock*& h : head)
    while (h != nullptr) {
      FreeBlock* next = h->next;
      std::free(h);
      h = next;
    }
}

size_t class_of(size_t bytes) { return (bytes + kGranule - 1) / kGranule - 1; }

}  // namespace

void* pool_allocate(size_t bytes) {
  if (kPooling && bytes > 0 && bytes <= kMaxPooledBytes) {
    if (!tls_pools_alive) {
      tls_pools_alive = true;
      (void)tls_pools;  // constructs it, registering its destructor for this thread
    }
    const size_t c = class_of(bytes);
    if (FreeBlock* b = tls_pools.head[c]) {
      tls_pools.head[c] = b->next;
      --tls_pools.count[c];
      return b;
    }
    bytes = (c + 1) * kGranule;  // every block of a class has the class's full size
  }
  void* p = std::malloc(bytes);
  if (p == nullptr) throw std::bad_alloc();
  return p;
}

void pool_deallocate(void* p, size_t bytes) noexcept {
  if (kPooling && p != nullptr && bytes > 0 && bytes <= kMaxPooledBytes && tls_pools_alive) {
    const size_t c = class_of(bytes);
    if (tls_pools.count[c] < kMaxPooledPerClass) {
      tls_pools.head[c] = new (p) FreeBlock{tls_pools.head[c]};
      ++tls_pools.count[c];
      return;
    }
  }
  std::free(p);
}

}  // namespace tally::detail
