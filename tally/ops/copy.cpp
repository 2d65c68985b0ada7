// Copies and writes: copy_ (with broadcasting and dtype conversion), fill_, contiguous, clone,
// to(dtype), index_put_. Cost: bytes read + bytes written, no FLOPs.

#include <cstring>

#include "tally/core/geometry.h"
#include "tally/kernels/cpu/elementwise.h"
#include "tally/ops/apply.h"
#include "tally/ops/creation.h"

namespace tally {

namespace {

/// dst[...] = src[...] converted; shapes already equal (src broadcast by the caller).
void copy_kernel(const Tensor& dst, const Tensor& src) {
  if (dst.numel() == 0) return;
  if (dst.dtype() == src.dtype() && dst.is_contiguous() && src.is_contiguous()) {
    char* d = static_cast<char*>(dst.data_ptr());
    const char* s = static_cast<const char*>(src.data_ptr());
    if (d == s) return;
    kernels::parallel_for(dst.nbytes(), int64_t{1} << 20, [&](int64_t b, int64_t e) { std::memmove(d + b, s + b, e - b); });
    return;
  }
  kernels::StridedLoop<2> loop(dst.sizes(), {static_cast<char*>(dst.data_ptr()), static_cast<char*>(src.data_ptr())},
                               {dst.strides(), src.strides()}, {dst.element_size(), src.element_size()});
  dispatch(dst.dtype(), "copy_", [&]<class TO>() {
    dispatch(src.dtype(), "copy_", [&]<class TI>() {
      loop.for_each([&](const std::array<char*, 2>& p, const std::array<int64_t, 2>& s, int64_t n) {
        for (int64_t i = 0; i < n; ++i)
          *reinterpret_cast<TO*>(p[0] + i * s[0]) = cast_to<TO>(*reinterpret_cast<const TI*>(p[1] + i * s[1]));
      });
    });
  });
}

struct Copy {
  static constexpr std::string_view name = "copy_";
  static constexpr bool inplace = true;
  static Tensor forward(const Tensor& dst, const Tensor& src) {
    geometry::check_no_internal_overlap(dst.sizes(), dst.strides());
    Tensor s = src;
    if (!(src.sizes() == dst.sizes())) {
      auto shape = geometry::broadcast_shapes(dst.sizes(), src.sizes());
      TALLY_CHECK(IntArrayRef(shape) == dst.sizes(), "copy_: source of shape ", src.sizes(),
                  " cannot be broadcast to destination of shape ", dst.sizes());
      s = src.expand(dst.sizes());
    }
    copy_kernel(dst, s);
    return dst;
  }
  static ops::Cost cost(const Tensor& out, const Tensor& dst, const Tensor& src) {
    return {0, src.nbytes(), dst.nbytes()};
  }
};

struct Fill {
  static constexpr std::string_view name = "fill_";
  static constexpr bool inplace = true;
  static Tensor forward(const Tensor& dst, Scalar value) {
    if (dst.numel() == 0) return dst;
    dispatch(dst.dtype(), "fill_", [&]<class T>() {
      const T v = value.to<T>();
      kernels::StridedLoop<1> loop(dst.sizes(), {static_cast<char*>(dst.data_ptr())}, {dst.strides()}, {dst.element_size()});
      loop.for_each([&](const std::array<char*, 1>& p, const std::array<int64_t, 1>& s, int64_t n) {
        if (s[0] == sizeof(T)) std::fill_n(reinterpret_cast<T*>(p[0]), n, v);
        else for (int64_t i = 0; i < n; ++i) *reinterpret_cast<T*>(p[0] + i * s[0]) = v;
      });
    });
    return dst;
  }
  static ops::Cost cost(const Tensor& out, const Tensor& dst, Scalar) { return {0, 0, dst.nbytes()}; }
};

struct Clone {
  static constexpr std::string_view name = "clone";
  static Tensor forward(const Tensor& x, Dtype dtype) {
    Tensor out = empty(x.sizes(), dtype);
    copy_kernel(out, x);
    return out;
  }
  static ops::Cost cost(const Tensor& out, const Tensor& x, Dtype) { return {0, x.nbytes(), out.nbytes()}; }
  // A copy (or dtype conversion) passes the gradient through, converted back to x's dtype.
  static constexpr bool backward_reads_values = false;
  static TensorList backward(const ops::BackwardContext& c, const Tensor& x, Dtype) { return {c.grad.to(x.dtype())}; }
};

}  // namespace

Tensor& Tensor::copy_(const Tensor& src) {
  ops::apply<Copy>(*this, src);
  return *this;
}

Tensor& Tensor::fill_(Scalar value) {
  ops::apply<Fill>(*this, value);
  return *this;
}

Tensor Tensor::clone() const { return ops::apply<Clone>(*this, dtype()); }

Tensor Tensor::contiguous() const { return is_contiguous() ? *this : clone(); }

Tensor Tensor::to(Dtype dtype, bool copy) const {
  if (dtype == this->dtype() && !copy) return *this;
  return ops::apply<Clone>(*this, dtype);
}

Tensor& Tensor::index_put_(std::initializer_list<indexing::TensorIndex> indices, Scalar value) {
  index(indices).fill_(value);
  return *this;
}

Tensor& Tensor::index_put_(std::initializer_list<indexing::TensorIndex> indices, const Tensor& values) {
  index(indices).copy_(values);
  return *this;
}

}  // namespace tally
