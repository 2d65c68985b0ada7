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
  if (saved_by_nodes_.fetch_add(1, std::memory_order_acq_rel) == 0) settle_activation_category();
}

void StorageImpl::release_for_backward() {
  if (saved_by_nodes_.fetch_sub(1, std::memory_order_acq_rel) == 1) settle_activation_category();
}

void StorageImpl::settle_activation_category() {
  // Decided under the lock from the count as it is now, so racing crossings end consistent.
  std::lock_guard lock(saved_mu_);
  const bool kept = saved_by_nodes_.load(std::memory_order_acquire) > 0;
  if (kept && category_ == MemoryCategory::Other) set_category(MemoryCategory::Activations);
  else if (!kept && category_ == MemoryCategory::Activations) set_category(MemoryCategory::Other);
}

}  // namespace tally
