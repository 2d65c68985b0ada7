#include "tally/core/storage.h"

#include "tally/cuda/runtime.h"

namespace tally {

StorageImpl::StorageImpl(int64_t nbytes, MemoryCategory category, Device device)
    : data_(device.is_cpu() ? CpuAllocator::get().allocate(nbytes, category)
                            : cuda::detail::allocate(nbytes, category, device.index())),
      nbytes_(nbytes),
      category_(category),
      device_(device) {}

StorageImpl::StorageImpl(void* data, int64_t nbytes, std::function<void(void*)> deleter, Device device)
    : data_(data), nbytes_(nbytes), category_(MemoryCategory::Other), device_(device), deleter_(std::move(deleter)) {}

StorageImpl::~StorageImpl() {
  if (deleter_) deleter_(data_);
  else if (device_.is_cpu()) CpuAllocator::get().deallocate(data_, nbytes_, category_);
  else cuda::detail::deallocate(data_, nbytes_, category_, device_.index());
}

void StorageImpl::set_category(MemoryCategory category) {
  if (!deleter_) {
    if (device_.is_cpu()) CpuAllocator::get().recategorize(nbytes_, category_, category);
    else cuda::detail::recategorize(nbytes_, category_, category, device_.index());
  }
  category_ = category;
}

}  // namespace tally
