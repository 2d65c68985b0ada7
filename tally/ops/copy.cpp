// Copies and writes: copy_ (with broadcasting and dtype conversion), fill_, contiguous, clone,
// to(dtype), index_put_. Cost: bytes read + bytes written, no FLOPs.

#include <bit>
#include <cstring>

#include "tally/core/geometry.h"
#include "tally/cuda/runtime.h"
#include "tally/kernels/cpu/dispatch.h"
#include "tally/kernels/cpu/elementwise.h"
#include "tally/ops/apply.h"
#include "tally/ops/creation.h"
#include "tally/ops/cuda_launch.h"

namespace tally {

namespace {

/// Every value of an 8-bit float as float32 bits, so that widening one is a lookup instead of
/// decode()'s branches (FP8 layers widen both operands of every product to bfloat16). A plain
/// array of the file's own type, built on first use (Note [CPU kernel dispatch]: no std:: types
/// in kernels).
struct Float8Table {
  uint32_t bits[256];
};
template <class F8>
const Float8Table& float8_table() {
  static const Float8Table table = [] {
    Float8Table t{};
    for (int b = 0; b < 256; ++b) {
      F8 v;
      v.bits = static_cast<uint8_t>(b);
      t.bits[b] = std::bit_cast<uint32_t>(static_cast<float>(v));
    }
    return t;
  }();
  return table;
}

/// One element of a copy: the bits as they are for one dtype (NaN payloads and -0 kept), else
/// the conversion.
template <class TO, class TI>
[[gnu::always_inline]] inline void copy_element(char* dst, const char* src) {
  if constexpr (std::is_same_v<TO, TI>) {
    using Bits = kernels::BitsOf<TO>;
    *reinterpret_cast<Bits*>(dst) = *reinterpret_cast<const Bits*>(src);
  } else {
    *reinterpret_cast<TO*>(dst) = cast_to<TO>(*reinterpret_cast<const TI*>(src));
  }
}

/// The converting copy over `loop` (operand 0 of dtype `to`, 1 of `from`); built once per target
/// (Note [CPU kernel dispatch]).
void convert_kernel(const kernels::StridedLoop<2>& loop, Dtype to, Dtype from) {
  dispatch(to, "copy_", [&]<class TO>() {
    dispatch(from, "copy_", [&]<class TI>() {
      loop.for_each([&](const std::array<char*, 2>& p, const std::array<int64_t, 2>& s, int64_t n) {
        int64_t i = 0;
        if constexpr (std::is_same_v<TO, TI>) {
          // Re-striding without conversion (contiguous() of a view): the bits move as they are,
          // a run at a time where both sides are dense.
          if (s[0] == sizeof(TO) && s[1] == sizeof(TI)) {
            std::memcpy(p[0], p[1], static_cast<size_t>(n) * sizeof(TO));
          } else {
            for (; i < n; ++i) copy_element<TO, TI>(p[0] + i * s[0], p[1] + i * s[1]);
          }
          return;
        }
        if (s[0] == sizeof(TO) && s[1] == sizeof(TI)) {
          // Masks to and from bool, bytes read and written as uint8_t: GCC vectorises no loop that
          // loads or stores bool, and a 16-bit float's conversion from one is a scalar rounding.
          if constexpr (std::is_same_v<TI, bool>) {  // each element is the bits of 1 or of 0
            using Bits = kernels::BitsOf<TO>;
            const TO one_value = cast_to<TO>(true);
            Bits one;
            std::memcpy(&one, &one_value, sizeof one);
            const auto* in = reinterpret_cast<const uint8_t*>(p[1]);
            auto* out = reinterpret_cast<Bits*>(p[0]);
            for (; i < n; ++i) out[i] = in[i] != 0 ? one : Bits{0};
            return;
          } else if constexpr (std::is_same_v<TO, bool>) {
            auto* out = reinterpret_cast<uint8_t*>(p[0]);
            const auto* in = reinterpret_cast<const TI*>(p[1]);
            for (; i < n; ++i) out[i] = kernels::nonzero_at(in, i);
            return;
          }
          // The casts mixed precision makes all the time (float32 to and from bfloat16 or float16),
          // 16 lanes at a time; rounding as the scalar conversion's.
          if constexpr ((std::is_same_v<TO, BFloat16> || std::is_same_v<TO, Half>) && std::is_same_v<TI, float>) {
            for (; i + 16 <= n; i += 16)
              kernels::store_16bit<TO>(reinterpret_cast<uint16_t*>(p[0]) + i, kernels::load(reinterpret_cast<const float*>(p[1]) + i));
          } else if constexpr ((std::is_same_v<TI, BFloat16> || std::is_same_v<TI, Half>) && std::is_same_v<TO, float>) {
            for (; i + 16 <= n; i += 16)
              kernels::store(reinterpret_cast<float*>(p[0]) + i, kernels::load_16bit<TI>(reinterpret_cast<const uint16_t*>(p[1]) + i));
          }
        }
        if constexpr ((std::is_same_v<TI, Float8_e4m3fn> || std::is_same_v<TI, Float8_e5m2>) &&
                      (std::is_same_v<TO, float> || std::is_same_v<TO, BFloat16>)) {
          // Exact both ways: every 8-bit float is a bfloat16, so the float32 bits' top half is it.
          const Float8Table& table = float8_table<TI>();
          for (; i < n; ++i) {
            const uint32_t bits = table.bits[*reinterpret_cast<const uint8_t*>(p[1] + i * s[1])];
            if constexpr (std::is_same_v<TO, float>) {
              *reinterpret_cast<uint32_t*>(p[0] + i * s[0]) = bits;
            } else {
              *reinterpret_cast<uint16_t*>(p[0] + i * s[0]) = static_cast<uint16_t>(bits >> 16);
            }
          }
          return;
        }
        for (; i < n; ++i) copy_element<TO, TI>(p[0] + i * s[0], p[1] + i * s[1]);
      });
    });
  });
}

#if TALLY_PRIMARY_PASS
/// dst[...] = src[...] converted, both on the CPU; shapes already equal (src broadcast by the caller).
void copy_cpu(const Tensor& dst, const Tensor& src) {
  if (dst.numel() == 0) return;
  if (dst.dtype() == src.dtype() && dst.is_contiguous() && src.is_contiguous()) {
    char* d = static_cast<char*>(dst.data_ptr());
    const char* s = static_cast<const char*>(src.data_ptr());
    if (d == s) return;
    kernels::parallel_for(dst.nbytes(), int64_t{1} << 20, [&](int64_t b, int64_t e) { std::memmove(d + b, s + b, e - b); });
    return;
  }
  cpu_kernels().run<&convert_kernel>(
      kernels::StridedLoop<2>(dst.sizes(), {static_cast<char*>(dst.data_ptr()), static_cast<char*>(src.data_ptr())},
                              {dst.strides(), src.strides()}, {dst.element_size(), src.element_size()}),
      dst.dtype(), src.dtype());
}

/// Bytes of two dense tensors of one dtype between host and GPU (or GPU and GPU).
void copy_dense_bytes(const Tensor& dst, const Tensor& src, bool non_blocking) {
  const Device gpu = dst.is_cuda() ? dst.device() : src.device();
  // Only page-locked host memory can be left to an asynchronous copy (Note in cuda/runtime.h).
  const bool async = non_blocking && (dst.is_cuda() || dst.is_pinned()) && (src.is_cuda() || src.is_pinned());
  cuda::detail::copy_bytes(dst.data_ptr(), dst.is_cuda(), src.data_ptr(), src.is_cuda(), dst.nbytes(), gpu.index(), async);
}

/// dst[...] = src[...] converted, on any devices; shapes already equal. A copy between host and
/// GPU moves dense bytes; any conversion or re-striding happens on one side of it.
void copy_kernel(const Tensor& dst, const Tensor& src, bool non_blocking = false) {
  if (dst.numel() == 0) return;
  if (dst.is_cpu() && src.is_cpu()) return copy_cpu(dst, src);
  if (dst.is_cuda() && src.is_cuda()) {
    TALLY_CHECK_TYPE(NotImplementedError, dst.device() == src.device(), "copy_ between two GPUs (", src.device(),
                     " to ", dst.device(), ") is not supported yet: go through the CPU");
    if (dst.dtype() == src.dtype() && dst.is_contiguous() && src.is_contiguous() && !src.is_same_storage(dst) &&
        src.strides() == dst.strides())
      return copy_dense_bytes(dst, src, true);
    return kernels::cuda::copy(ops::cuda_launch<2>(dst, {&src}));
  }
  const bool direct = dst.dtype() == src.dtype() && dst.is_contiguous() && src.is_contiguous() &&
                      geometry::numel(src.sizes()) == dst.numel() && src.strides() == dst.strides();
  if (direct) return copy_dense_bytes(dst, src, non_blocking);
  if (dst.is_cuda()) {  // host -> GPU: convert and pack on the host, re-stride on the GPU
    Tensor packed = src.to(dst.dtype()).contiguous();
    if (dst.is_contiguous()) return copy_dense_bytes(dst, packed, false);
    Tensor staged = empty(dst.sizes(), dst.options());
    copy_dense_bytes(staged, packed, false);
    return kernels::cuda::copy(ops::cuda_launch<2>(dst, {&staged}));
  }
  // GPU -> host: pack on the GPU, convert and re-stride on the host
  Tensor packed = src.contiguous();
  if (dst.is_contiguous() && dst.dtype() == src.dtype()) return copy_dense_bytes(dst, packed, false);
  Tensor staged = empty(src.sizes(), src.dtype());
  copy_dense_bytes(staged, packed, false);
  copy_cpu(dst, staged);
}

struct Copy {
  static constexpr std::string_view name = "copy_";
  static constexpr bool crosses_devices = true;
  static constexpr bool elementwise = true;
  static ops::OutputSpec meta(const Tensor& dst, const Tensor& src) {
    if (!(src.sizes() == dst.sizes())) {
      auto shape = geometry::broadcast_shapes(dst.sizes(), src.sizes());
      TALLY_CHECK(IntArrayRef(shape) == dst.sizes(), "copy_: source of shape ", src.sizes(),
                  " cannot be broadcast to destination of shape ", dst.sizes());
    }
    return {DimVector(dst.sizes()), dst.dtype(), dst.device()};
  }
  static void compute(const Tensor& out, const Tensor&, const Tensor& src) {
    copy_kernel(out, src.sizes() == out.sizes() ? src : src.expand(out.sizes()));
  }
  static ops::Cost cost(const Tensor&, const Tensor& dst, const Tensor& src) { return {0, ops::bytes_held(src), dst.nbytes()}; }
};

struct Fill {
  static constexpr std::string_view name = "fill_";
  static constexpr bool supports_cuda = true;
  static constexpr bool elementwise = true;
  static constexpr bool aliased_output_ok = true;  // one value: zeros({1, 3}).expand({2, 3}).fill_(2) is torch's too
  static ops::OutputSpec meta(const Tensor& dst, Scalar value) {
    check_scalar_fits(value, dst.dtype(), name);
    return {DimVector(dst.sizes()), dst.dtype()};
  }
  static void compute(const Tensor& out, const Tensor&, Scalar value) {
    dispatch(out.dtype(), "fill_", [&]<class T>() {
      const T v = value.to<T>();
      if (out.is_cuda()) {
        unsigned char bytes[8] = {};
        std::memcpy(bytes, &v, sizeof(T));
        kernels::cuda::fill(ops::cuda_launch<1>(out, {}), bytes);
        return;
      }
      // The value's bits, filled as an unsigned integer of its size: a plain store the compiler
      // vectorises (a 16-bit float's assignment is not), and a memset for zeros.
      using Bits = kernels::BitsOf<T>;
      Bits bits;
      std::memcpy(&bits, &v, sizeof(T));
      kernels::StridedLoop<1> loop(out.sizes(), {static_cast<char*>(out.data_ptr())}, {out.strides()}, {out.element_size()});
      loop.for_each([&](const std::array<char*, 1>& p, const std::array<int64_t, 1>& s, int64_t n) {
        if (s[0] == sizeof(T) && bits == 0) std::memset(p[0], 0, static_cast<size_t>(n) * sizeof(T));
        else if (s[0] == sizeof(T)) std::fill_n(reinterpret_cast<Bits*>(p[0]), n, bits);
        else for (int64_t i = 0; i < n; ++i) *reinterpret_cast<Bits*>(p[0] + i * s[0]) = bits;
      });
    });
  }
  static ops::Cost cost(const Tensor&, const Tensor& dst, Scalar) { return {0, 0, dst.nbytes()}; }
};

/// x.clone(memory_format), and contiguous() as clone(Contiguous).
struct Clone {
  static constexpr std::string_view name = "clone";
  static constexpr bool supports_cuda = true;
  static constexpr bool elementwise = true;
  static DimVector output_strides(IntArrayRef sizes, const Tensor& x, std::optional<MemoryFormat> format) {
    return strides_in_format(format, sizes, x.strides());
  }
  static ops::OutputSpec meta(const Tensor& x, std::optional<MemoryFormat>) { return {DimVector(x.sizes()), x.dtype()}; }
  static void compute(const Tensor& out, const Tensor& x, std::optional<MemoryFormat>) { copy_kernel(out, x); }
  static ops::Cost cost(const Tensor& out, const Tensor& x, std::optional<MemoryFormat>) { return {0, ops::bytes_held(x), out.nbytes()}; }
  // A copy passes the gradient through (in x's dtype, should it arrive in another).
  static constexpr bool backward_reads_values = false;
  static TensorList backward(const ops::BackwardContext& c, const Tensor& x, std::optional<MemoryFormat>) { return {c.grad.to(x.dtype())}; }
};

/// x.to(device, dtype, non_blocking, copy, memory_format): a copy to another dtype, device or
/// layout (PyTorch's _to_copy); the gradient goes back converted.
struct ToDevice {
  static constexpr std::string_view name = "_to_copy";
  static constexpr bool crosses_devices = true;
  static constexpr bool elementwise = true;
  // PyTorch's preserve_format by default, on any device: x.t().cuda() is transposed too.
  static DimVector output_strides(IntArrayRef sizes, const Tensor& x, Device, Dtype, bool, std::optional<MemoryFormat> format) {
    return strides_in_format(format, sizes, x.strides());
  }
  static ops::OutputSpec meta(const Tensor& x, Device device, Dtype dtype, bool, std::optional<MemoryFormat>) {
    return {DimVector(x.sizes()), dtype, device};
  }
  static void compute(const Tensor& out, const Tensor& x, Device, Dtype, bool non_blocking, std::optional<MemoryFormat>) {
    copy_kernel(out, x, non_blocking);
  }
  static ops::Cost cost(const Tensor& out, const Tensor& x, Device, Dtype, bool, std::optional<MemoryFormat>) {
    return {0, ops::bytes_held(x), out.nbytes()};
  }
  static constexpr bool backward_reads_values = false;
  static TensorList backward(const ops::BackwardContext& c, const Tensor& x, Device, Dtype, bool, std::optional<MemoryFormat>) {
    return {c.grad.to(x.device(), x.dtype())};
  }
};

#endif  // TALLY_PRIMARY_PASS

}  // namespace

#if TALLY_PRIMARY_PASS
Tensor Tensor::to(Device device, Dtype dtype, bool non_blocking, bool copy, std::optional<MemoryFormat> memory_format) const {
  // Self when nothing changes, whatever memory_format says: PyTorch's to() aliases unless the
  // format asked differs from suggest_memory_format(), which is Contiguous for every layout but
  // channels-last, a format tally does not have.
  if (!copy && device == this->device() && dtype == this->dtype()) return *this;
  // PyTorch's _to_copy, as on the ledger there: a cast is not a clone.
  return ops::apply<ToDevice>(*this, device, dtype, non_blocking, memory_format);
}

Tensor Tensor::to(Dtype dtype, bool non_blocking, bool copy, std::optional<MemoryFormat> memory_format) const {
  return to(device(), dtype, non_blocking, copy, memory_format);
}

Tensor Tensor::to(Device device, bool non_blocking, bool copy, std::optional<MemoryFormat> memory_format) const {
  return to(device, dtype(), non_blocking, copy, memory_format);
}

Tensor Tensor::pin_memory() const {
  TALLY_CHECK_TYPE(DeviceError, is_cpu(), "cannot pin '", device(), "' memory: only CPU tensors can be pinned");
  const int64_t nbytes = this->nbytes();
  void* p = cuda::detail::allocate_pinned(nbytes);
  auto storage = std::make_shared<StorageImpl>(p, nbytes, [](void* q) { cuda::detail::free_pinned(q); });
  storage->set_pinned();
  auto impl = std::make_shared<TensorImpl>();
  impl->storage = std::move(storage);
  impl->sizes = DimVector(sizes());
  impl->strides = DimVector(geometry::contiguous_strides(sizes()));
  impl->dtype = dtype();
  Tensor out(std::move(impl));
  out.copy_(*this);
  out.storage()->reset_version();
  return out;
}

Tensor& Tensor::copy_(const Tensor& src) const { return ops::apply_inplace<Copy>(*this, src); }

Tensor& Tensor::fill_(Scalar value) const { return ops::apply_inplace<Fill>(*this, value); }

Tensor Tensor::clone(std::optional<MemoryFormat> memory_format) const { return ops::apply<Clone>(*this, memory_format); }

Tensor Tensor::contiguous() const { return is_contiguous() ? *this : clone(MemoryFormat::Contiguous); }

#endif  // TALLY_PRIMARY_PASS

}  // namespace tally

TALLY_CPU_KERNELS(copy, &convert_kernel)
