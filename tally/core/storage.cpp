#include "tally/core/storage.h"

namespace tally {

StorageImpl::StorageImpl(int64_t nbytes, MemoryCategory category)
    : data_(CpuAllocator::get().allocate(nbytes, category)), nbytes_(nbytes), category_(category) {}

StorageImpl::StorageImpl(void* data, int64_t nbytes, std::function<void(void*)> deleter)
    : data_(data), nbytes_(nbytes), category_(MemoryCategory::Other), deleter_(std::move(deleter)) {}

StorageImpl::~StorageImpl() {
  if (deleter_) deleter_(data_);
  else CpuAllocator::get().deallocate(data_, nbytes_, category_);
}

void StorageImpl::set_category(MemoryCategory category) {
  if (!deleter_) CpuAllocator::get().recategorize(nbytes_, category_, category);
  category_ = category;
}

}  // namespace tally
