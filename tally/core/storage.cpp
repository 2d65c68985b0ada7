#include "tally/core/storage.h"

#include "tally/cuda/runtime.h"

namespace tally {

namespace {
void* allocate(int64_t nbytes, MemoryCategory category, Device device) {
  switch (device.type()) {
    case kCPU: return CpuAllocator::get().allocate(nbytes, category);
    case kCUDA: return cuda::detail::allocate(nbytes, category, device.index());
    case kMeta: meta_memory::allocate(nbytes, category); return nullptr;
  }
  return nullptr;
}
}  // namespace

StorageImpl::StorageImpl(int64_t nbytes, MemoryCategory category, Device device)
    : data_(allocate(nbytes, category, device)), nbytes_(nbytes), category_(category), device_(device) {}

StorageImpl::StorageImpl(void* data, int64_t nbytes, std::function<void(void*)> deleter, Device device)
    : data_(data), nbytes_(nbytes), category_(MemoryCategory::Other), device_(device), deleter_(std::move(deleter)) {}

StorageImpl::~StorageImpl() {
  if (deleter_) deleter_(data_);
  else if (device_.is_cpu()) CpuAllocator::get().deallocate(data_, nbytes_, category_);
  else if (device_.is_meta()) meta_memory::deallocate(nbytes_, category_);
  else cuda::detail::deallocate(data_, nbytes_, category_, device_.index());
}

void StorageImpl::set_category(MemoryCategory category) {
  if (!deleter_) {
    if (device_.is_cpu()) CpuAllocator::get().recategorize(nbytes_, category_, category);
    else if (device_.is_meta()) meta_memory::recategorize(nbytes_, category_, category);
    else cuda::detail::recategorize(nbytes_, category_, category, device_.index());
  }
  category_ = category;
}

void StorageImpl::retain_for_backward() {
  std::lock_guard lock(saved_mu_);
  if (saved_by_nodes_++ == 0 && category_ == MemoryCategory::Other) set_category(MemoryCategory::Activations);
}

void StorageImpl::release_for_backward() {
  std::lock_guard lock(saved_mu_);
  if (--saved_by_nodes_ == 0 && category_ == MemoryCategory::Activations) set_category(MemoryCategory::Other);
}

}  // namespace tally
