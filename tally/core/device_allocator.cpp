#include "tally/core/device_allocator.h"

#include <atomic>

#include "tally/error/error.h"

namespace tally {

namespace {
// One slot: CUDA is the only device with an allocator of its own. A function-local static, so
// that an installer running during static initialisation finds it ready.
std::atomic<DeviceAllocator*>& cuda_slot() {
  static std::atomic<DeviceAllocator*> slot{nullptr};
  return slot;
}

std::atomic<DeviceAllocator*>& slot_of(DeviceType type) {
  TALLY_CHECK_TYPE(DeviceError, type == kCUDA, "device type ", Device(type).str(), " has no allocator of its own");
  return cuda_slot();
}
}  // namespace

void set_device_allocator(DeviceType type, DeviceAllocator* allocator) { slot_of(type).store(allocator); }

DeviceAllocator& device_allocator(DeviceType type) {
  DeviceAllocator* a = slot_of(type).load();
  TALLY_CHECK_TYPE(DeviceError, a != nullptr, "no allocator is installed for ", Device(type).str(),
                   " devices: the CUDA layer of this tally was not linked in");
  return *a;
}

}  // namespace tally
