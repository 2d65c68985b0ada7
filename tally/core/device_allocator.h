#pragma once
// The memory of devices core does not own itself (CUDA). The layer that owns such a device
// installs its allocator at start-up (tally/cuda/runtime.cpp; tally/cuda/no_cuda.cpp installs one
// that refuses), and a storage on that device allocates, frees and recounts its bytes through
// it: core, below the CUDA layer, never includes it.

#include <cstdint>

#include "tally/core/allocator.h"
#include "tally/core/device.h"

namespace tally {

class DeviceAllocator {
 public:
  virtual ~DeviceAllocator() = default;
  /// `nbytes` fresh bytes on device `index`, counted under `category`.
  virtual void* allocate(int64_t nbytes, MemoryCategory category, int index) = 0;
  virtual void deallocate(void* data, int64_t nbytes, MemoryCategory category, int index) = 0;
  /// Move `nbytes` from one category's count to another's.
  virtual void recategorize(int64_t nbytes, MemoryCategory from, MemoryCategory to, int index) = 0;
};

/// Install the allocator of devices of `type` (from a static initializer of the layer that owns
/// them; the allocator lives as long as the program).
void set_device_allocator(DeviceType type, DeviceAllocator* allocator);

/// The allocator installed for `type`; DeviceError when none is.
DeviceAllocator& device_allocator(DeviceType type);

}  // namespace tally
