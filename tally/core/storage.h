#pragma once
// Storage: a ref-counted block of bytes that tensors view. Several tensors share one storage;
// it is freed when the last of them goes.

#include <atomic>
#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>

#include "tally/core/allocator.h"
#include "tally/core/device.h"

namespace tally {

/// The bytes behind one or more tensors.
class StorageImpl {
 public:
  /// `nbytes` fresh bytes from `device`'s caching allocator, counted under `category`. Not zeroed.
  StorageImpl(int64_t nbytes, MemoryCategory category, Device device = Device(kCPU));
  /// Bytes owned elsewhere (a memory-mapped file, pinned host memory), released with `deleter`; not counted.
  StorageImpl(void* data, int64_t nbytes, std::function<void(void*)> deleter, Device device = Device(kCPU));
  ~StorageImpl();
  StorageImpl(const StorageImpl&) = delete;
  StorageImpl& operator=(const StorageImpl&) = delete;

  /// First byte (null on the meta device, which holds no bytes).
  void* data() const { return data_; }
  /// Size in bytes.
  int64_t nbytes() const { return nbytes_; }
  /// Where the bytes are.
  Device device() const { return device_; }
  /// Whether these are page-locked host bytes that the GPU copies asynchronously (pin_memory()).
  bool is_pinned() const { return pinned_; }
  void set_pinned() { pinned_ = true; }
  /// Memory category these bytes are accounted under.
  MemoryCategory category() const { return category_.load(std::memory_order_relaxed); }
  /// Move these bytes to another memory category (e.g. a tensor registered as a parameter).
  void set_category(MemoryCategory category);

  // Note [Activations]
  // The lecture's "activations" are the tensors autograd keeps for backward. A graph node marks
  // each storage it keeps; while at least one node keeps it, bytes of category Other count as
  // Activations, and they go back to Other when the last node lets go (backward released it, or
  // the graph was dropped). Parameters, gradients and optimizer state a node keeps stay theirs.
  // Only a count crossing zero takes a lock; an op's output that a node will keep is allocated
  // as activations to begin with (ops::detail::empty_activation), so a chain of recorded ops
  // moves no bytes between categories until backward lets go.
  /// A graph node keeps these bytes for backward.
  void retain_for_backward();
  /// A node that kept these bytes let them go.
  void release_for_backward();

  /// How many in-place ops have written these bytes (PyTorch's version counter, shared by every
  /// view). Graph nodes remember it for the tensors they save, so a backward that would read
  /// overwritten values raises instead (Note [Version counter] in ops/apply.h).
  /// Whether this is the no-bytes storage of a tensor a graph node did not keep (Note [Saved
  /// tensors] in ops/apply.h): reading its data is a bug.
  bool is_stand_in() const { return stand_in_; }
  void mark_stand_in() { stand_in_ = true; }

  uint64_t version() const { return version_.load(std::memory_order_relaxed); }
  /// Called by every top-level in-place op after it wrote.
  void bump_version() { version_.fetch_add(1, std::memory_order_relaxed); }
  /// Back to version 0, only for a factory function's own new storage that nobody else has seen:
  /// the fill that made `zeros` or `randn` is not a write a user made (torch.zeros(3)._version is 0).
  void reset_version() { version_.store(0, std::memory_order_relaxed); }

 private:
  void* data_;
  int64_t nbytes_;
  std::atomic<MemoryCategory> category_;
  Device device_;
  bool pinned_ = false;
  bool stand_in_ = false;
  std::function<void(void*)> deleter_;  // empty for allocator-owned bytes
  std::atomic<uint64_t> version_{0};
  /// Make the category agree with saved_by_nodes_ after it crossed zero.
  void settle_activation_category();
  /// set_category with category_mu_ held.
  void move_to_category(MemoryCategory category);
  std::atomic<int> saved_by_nodes_{0};  // graph nodes keeping these bytes (Note [Activations])
  // One change of category at a time: a settle in one thread's backward and another thread's
  // set_category would otherwise both move the same bytes (Note [Concurrent backward]).
  std::mutex category_mu_;
};

/// A handle to a tensor's bytes, as libtorch's c10::Storage: copies share the bytes;
/// `t.storage().nbytes()`, `.data()`, `.device()`, and `->` for the rest of StorageImpl. Empty
/// (false) for a tensor with no storage.
class Storage {
 public:
  Storage() = default;
  Storage(std::shared_ptr<StorageImpl> impl) : impl_(std::move(impl)) {}  // NOLINT: implicit, as a handle is made
  StorageImpl* operator->() const { return impl_.get(); }
  StorageImpl& operator*() const { return *impl_; }
  StorageImpl* get() const { return impl_.get(); }
  explicit operator bool() const { return impl_ != nullptr; }
  bool operator==(const Storage& other) const { return impl_ == other.impl_; }
  /// The shared owner, for a weak_ptr or to keep the bytes alive elsewhere.
  const std::shared_ptr<StorageImpl>& shared() const { return impl_; }
  long use_count() const { return impl_.use_count(); }

  /// First byte (null on the meta device, which holds no bytes).
  void* data() const { return impl_->data(); }
  /// Size in bytes.
  int64_t nbytes() const { return impl_->nbytes(); }
  /// Where the bytes are.
  Device device() const { return impl_->device(); }

 private:
  std::shared_ptr<StorageImpl> impl_;
};

}  // namespace tally
