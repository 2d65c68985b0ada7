#pragma once
// A non-owning view of int64 values, constructible from `{4, 8}`, a vector or a pointer and
// length, like c10::IntArrayRef. Only valid while what it views lives.

#include <cstdint>
#include <initializer_list>
#include <ostream>
#include <vector>

#include "tally/core/small_vector.h"

namespace tally {

/// Shapes, strides and dim lists passed to ops.
class IntArrayRef {
 public:
  IntArrayRef() = default;
  // The list outlives the call it is written in, which is all an argument view needs.
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Winit-list-lifetime"
  IntArrayRef(std::initializer_list<int64_t> l) : data_(l.begin()), size_(l.size()) {}  // NOLINT
#pragma GCC diagnostic pop
  IntArrayRef(const std::vector<int64_t>& v) : data_(v.data()), size_(v.size()) {}      // NOLINT
  template <size_t N>
  IntArrayRef(const SmallVector<int64_t, N>& v) : data_(v.data()), size_(v.size()) {}  // NOLINT
  IntArrayRef(const int64_t* data, size_t size) : data_(data), size_(size) {}
  IntArrayRef(const int64_t& single) : data_(&single), size_(1) {}  // NOLINT: x.sum(1)

  const int64_t* begin() const { return data_; }
  const int64_t* end() const { return data_ + size_; }
  const int64_t* data() const { return data_; }
  size_t size() const { return size_; }
  bool empty() const { return size_ == 0; }
  int64_t operator[](size_t i) const { return data_[i]; }
  int64_t back() const { return data_[size_ - 1]; }
  /// The `length` values from `start` on (c10::ArrayRef::slice); the caller keeps them in range.
  IntArrayRef slice(size_t start, size_t length) const { return {data_ + start, length}; }
  std::vector<int64_t> vec() const { return {begin(), end()}; }
  bool operator==(IntArrayRef o) const {
    if (size_ != o.size_) return false;
    for (size_t i = 0; i < size_; ++i)
      if (data_[i] != o.data_[i]) return false;
    return true;
  }

 private:
  const int64_t* data_ = nullptr;
  size_t size_ = 0;
};

/// Sizes, strides and dim lists that an op owns: inline up to 6 dims (Note [Small vectors]).
using DimVector = SmallVector<int64_t, 6>;

/// Prints as PyTorch prints a size in messages: [2, 3].
inline std::ostream& operator<<(std::ostream& os, IntArrayRef a) {
  os << '[';
  for (size_t i = 0; i < a.size(); ++i) os << (i ? ", " : "") << a[i];
  return os << ']';
}

}  // namespace tally
