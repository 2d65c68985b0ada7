#pragma once
// Storage: a ref-counted block of bytes that tensors view. Several tensors share one storage;
// it is freed when the last of them goes.

#include <cstdint>
#include <functional>
#include <memory>

#include "tally/core/allocator.h"

namespace tally {

/// The bytes behind one or more tensors.
class StorageImpl {
 public:
  /// `nbytes` fresh bytes from the caching allocator, counted under `category`. Not zeroed.
  StorageImpl(int64_t nbytes, MemoryCategory category);
  /// Bytes owned elsewhere (a memory-mapped file), released with `deleter`; not counted.
  StorageImpl(void* data, int64_t nbytes, std::function<void(void*)> deleter);
  ~StorageImpl();
  StorageImpl(const StorageImpl&) = delete;
  StorageImpl& operator=(const StorageImpl&) = delete;

  /// First byte.
  void* data() const { return data_; }
  /// Size in bytes.
  int64_t nbytes() const { return nbytes_; }
  /// Memory category these bytes are accounted under.
  MemoryCategory category() const { return category_; }
  /// Move these bytes to another memory category (e.g. a tensor registered as a parameter).
  void set_category(MemoryCategory category);

 private:
  void* data_;
  int64_t nbytes_;
  MemoryCategory category_;
  std::function<void(void*)> deleter_;  // empty for allocator-owned bytes
};

using Storage = std::shared_ptr<StorageImpl>;

}  // namespace tally
