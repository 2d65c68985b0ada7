#include "tally/core/storage.h"

#include "tally/core/device_allocator.h"

namespace tally {

namespace {
void* allocate(int64_t nbytes, MemoryCategory category, Device device) {
  switch (device.type()) {
    case kCPU: return CpuAllocator::get().allocate(nbytes, category);
    case kCUDA: return device_allocator(kCUDA).allocate(nbytes, category, device.index());
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
  else if (device_.is_cpu()) CpuAllocator::get().deallocate(data_, nbytes_, category());
  else if (device_.is_meta()) meta_memory::deallocate(nbytes_, category());
  else device_allocator(device_.type()).deallocate(data_, nbytes_, category(), device_.index());
}

void StorageImpl::set_category(MemoryCategory category) {
  std::lock_guard lock(category_mu_);
  move_to_category(category);
}

void StorageImpl::move_to_category(MemoryCategory category) {
  const MemoryCategory from = category_.load(std::memory_order_relaxed);
  if (!deleter_) {
    if (device_.is_cpu()) CpuAllocator::get().recategorize(nbytes_, from, category);
    else if (device_.is_meta()) meta_memory::recategorize(nbytes_, from, category);
    else device_allocator(device_.type()).recategorize(nbytes_, from, category, device_.index());
  }
  category_.store(category, std::memory_order_relaxed);
}

void StorageImpl::retain_for_backward() {
  if (saved_by_nodes_.fetch_add(1, std::memory_order_acq_rel) == 0) settle_activation_category();
}

void StorageImpl::release_for_backward() {
  if (saved_by_nodes_.fetch_sub(1, std::memory_order_acq_rel) == 1) settle_activation_category();
}

void StorageImpl::settle_activation_category() {
  // Decided under the lock from the count as it is now, so racing crossings end consistent.
  std::lock_guard lock(category_mu_);
  const bool kept = saved_by_nodes_.load(std::memory_order_acquire) > 0;
  const MemoryCategory now = category_.load(std::memory_order_relaxed);
  if (kept && now == MemoryCategory::Other) move_to_category(MemoryCategory::Activations);
  else if (!kept && now == MemoryCategory::Activations) move_to_category(MemoryCategory::Other);
}

}  // namespace tally
