#pragma once
// A vector that keeps its first N elements inside the object and only goes to the heap beyond.
//
// Note [Small vectors]
// Every op builds a handful of short lists: the output's sizes and strides, broadcast shapes,
// the strided loop's merged dims. As std::vectors each is a malloc and a free, and on 8-element
// tensors those dominated an op's cost. Tensors rarely have more than 6 dims, so with N = 6 none
// of these lists touches the heap. Elements must be trivially copyable (ints, pointers, flags),
// which keeps copies to memcpy and leaves nothing to destroy.

#include <algorithm>
#include <cstddef>
#include <cstdlib>
#include <cstring>
#include <initializer_list>
#include <iterator>
#include <new>
#include <type_traits>
#include <vector>

namespace tally {

template <class T, size_t N>
class SmallVector {
  static_assert(std::is_trivially_copyable_v<T>, "SmallVector holds trivially copyable elements only");
  static_assert(N > 0, "SmallVector needs an inline capacity");

 public:
  using value_type = T;
  using iterator = T*;
  using const_iterator = const T*;
  using size_type = size_t;

  SmallVector() = default;
  explicit SmallVector(size_t n, const T& value = T()) { assign(n, value); }
  SmallVector(std::initializer_list<T> l) { assign(l.begin(), l.end()); }
  template <class It, class = typename std::iterator_traits<It>::iterator_category>
  SmallVector(It first, It last) { assign(first, last); }
  /// From any contiguous range of T (std::vector, IntArrayRef, another SmallVector).
  template <class R, class = decltype(std::declval<const R&>().data() + std::declval<const R&>().size())>
    requires(!std::is_same_v<std::remove_cvref_t<R>, SmallVector>)
  explicit SmallVector(const R& r) { assign(r.data(), r.data() + r.size()); }

  SmallVector(const SmallVector& o) { assign(o.begin(), o.end()); }
  SmallVector(SmallVector&& o) noexcept { take(o); }
  SmallVector& operator=(const SmallVector& o) {
    if (this != &o) assign(o.begin(), o.end());
    return *this;
  }
  SmallVector& operator=(SmallVector&& o) noexcept {
    if (this != &o) {
      release();
      take(o);
    }
    return *this;
  }
  [[gnu::always_inline]] ~SmallVector() { release(); }  // inline for the reason above release()

  size_t size() const { return size_; }
  bool empty() const { return size_ == 0; }
  size_t capacity() const { return capacity_; }
  T* data() { return data_; }
  const T* data() const { return data_; }
  T* begin() { return data_; }
  T* end() { return data_ + size_; }
  const T* begin() const { return data_; }
  const T* end() const { return data_ + size_; }
  T& operator[](size_t i) { return data_[i]; }
  const T& operator[](size_t i) const { return data_[i]; }
  T& front() { return data_[0]; }
  const T& front() const { return data_[0]; }
  T& back() { return data_[size_ - 1]; }
  const T& back() const { return data_[size_ - 1]; }

  void reserve(size_t n) {
    if (n > capacity_) grow_to(n);
  }
  void clear() { size_ = 0; }
  void resize(size_t n, const T& value = T()) {
    reserve(n);
    for (size_t i = size_; i < n; ++i) data_[i] = value;
    size_ = n;
  }
  void assign(size_t n, const T& value) {
    size_ = 0;
    resize(n, value);
  }
  template <class It>
    requires(!std::is_integral_v<It>)
  void assign(It first, It last) {
    const auto n = static_cast<size_t>(std::distance(first, last));
    size_ = 0;
    reserve(n);
    std::copy(first, last, data_);
    size_ = n;
  }
  void push_back(const T& v) {
    if (size_ == capacity_) {
      const T copy = v;  // v may live in this vector
      grow_to(capacity_ * 2);
      data_[size_++] = copy;
      return;
    }
    data_[size_++] = v;
  }
  void emplace_back(const T& v) { push_back(v); }
  void pop_back() { --size_; }
  /// Insert `v` before `pos`; returns the new element's position.
  T* insert(const T* pos, const T& v) {
    const auto i = static_cast<size_t>(pos - data_);
    push_back(v);
    std::rotate(data_ + i, data_ + size_ - 1, data_ + size_);
    return data_ + i;
  }
  /// Insert [first, last) before `pos`; returns the position of the first inserted element.
  template <class It>
    requires(!std::is_integral_v<It>)
  T* insert(const T* pos, It first, It last) {
    const auto i = static_cast<size_t>(pos - data_);
    const size_t old = size_;
    for (; first != last; ++first) push_back(*first);
    std::rotate(data_ + i, data_ + old, data_ + size_);
    return data_ + i;
  }
  /// Remove the element at `pos`; returns the position after it.
  T* erase(const T* pos) {
    const auto i = static_cast<size_t>(pos - data_);
    std::copy(data_ + i + 1, data_ + size_, data_ + i);
    --size_;
    return data_ + i;
  }
  /// A std::vector with the same elements.
  std::vector<T> vec() const { return {begin(), end()}; }

  friend bool operator==(const SmallVector& a, const SmallVector& b) {
    return a.size_ == b.size_ && std::equal(a.begin(), a.end(), b.begin());
  }

 private:
  bool on_heap() const { return data_ != inline_; }
  void grow_to(size_t n) {
    n = std::max({n, 2 * capacity_, size_ + 1, N + 1});
    T* p = static_cast<T*>(std::malloc(n * sizeof(T)));
    if (p == nullptr) throw std::bad_alloc();
    if (size_ > 0) std::memcpy(p, data_, size_ * sizeof(T));
    release();
    data_ = p;
    capacity_ = n;
  }
  // Always inlined: StridedLoop's destructor runs it inside CPU kernels, and an out-of-line copy
  // from a kernel pass built for another CPU would share its name (Note [CPU kernel dispatch]).
  [[gnu::always_inline]] void release() {
    if (on_heap()) std::free(data_);
    data_ = inline_;
    capacity_ = N;
  }
  // Steals o's heap block, or copies its inline elements; leaves o empty and inline.
  void take(SmallVector& o) {
    if (o.on_heap()) {
      data_ = o.data_;
      capacity_ = o.capacity_;
      size_ = o.size_;
      o.data_ = o.inline_;
      o.capacity_ = N;
    } else {
      std::memcpy(inline_, o.inline_, o.size_ * sizeof(T));
      size_ = o.size_;
    }
    o.size_ = 0;
  }

  T* data_ = inline_;
  size_t size_ = 0;
  size_t capacity_ = N;
  T inline_[N];
};

}  // namespace tally
