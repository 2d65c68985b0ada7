#pragma once
// Installs this layer's allocator functions (cuda::detail::allocate, deallocate, recategorize:
// the caching allocator, or in a build without CUDA the stubs that refuse) as core's allocator
// for CUDA storages (core/device_allocator.h). Included by the file that defines DeviceGuard in
// either build (runtime.cpp, no_cuda.cpp): every op on a GPU uses it, so a static link that pulls
// in any op pulls in the installer too.

#include "tally/core/device_allocator.h"
#include "tally/cuda/runtime.h"

namespace tally::cuda::detail {

struct InstalledAllocator final : DeviceAllocator {
  void* allocate(int64_t nbytes, MemoryCategory category, int index) override { return detail::allocate(nbytes, category, index); }
  void deallocate(void* data, int64_t nbytes, MemoryCategory category, int index) override {
    detail::deallocate(data, nbytes, category, index);
  }
  void recategorize(int64_t nbytes, MemoryCategory from, MemoryCategory to, int index) override {
    detail::recategorize(nbytes, from, to, index);
  }
};

/// Installs it; each of the two files calls this from a namespace-scope initializer of its own,
/// which runs before any function of that file (DeviceGuard's constructor among them) is used.
inline bool install_allocator() {
  static InstalledAllocator allocator;
  set_device_allocator(kCUDA, &allocator);
  return true;
}

}  // namespace tally::cuda::detail
