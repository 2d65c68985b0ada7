#pragma once
// Element types on the device, their conversions, and the host-side dtype switch (private to
// tally/kernels/cuda).
//
// Storage types: float, double, __half, __nv_bfloat16, F8E4M3, F8E5M2, int32_t, int64_t,
// uint8_t, int8_t, int16_t and Bool; dtype ids are tally::Dtype's values (kernels.h). Every
// kernel loads a storage value into its compute type (float for the 16- and 8-bit floats, bool for Bool, the
// type itself otherwise), works there, and rounds once on store, as the CPU kernels do
// (tally/dtype/dtype.h: compute_t and cast_to).

#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cuda_fp8.h>
#include <cuda_runtime.h>

#include <algorithm>
#include <atomic>
#include <cstdint>
#include <string>
#include <type_traits>

#include "tally/kernels/cuda/check.h"
#include "tally/table/dtypes.h"

namespace tally::kernels::cuda::dev {

/// Dtype ids: tally::Dtype's values, from the same list (tally/table/dtypes.h).
#define TALLY_DTYPE_ID_(Name, torch_name, bytes, ...) k##Name,
enum DtypeId : uint8_t { TALLY_FORALL_DTYPES(TALLY_DTYPE_ID_) };
#undef TALLY_DTYPE_ID_

// One-byte storage types that must not be confused with uint8_t.
struct Bool { uint8_t v; };
struct F8E4M3 { uint8_t bits; };
struct F8E5M2 { uint8_t bits; };

/// The storage type of each dtype id; every row of the list must have one of its size.
template <uint8_t Id> struct StorageOf;
template <> struct StorageOf<kFloat32> { using type = float; };
template <> struct StorageOf<kFloat64> { using type = double; };
template <> struct StorageOf<kFloat16> { using type = __half; };
template <> struct StorageOf<kBFloat16> { using type = __nv_bfloat16; };
template <> struct StorageOf<kFloat8_e4m3fn> { using type = F8E4M3; };
template <> struct StorageOf<kFloat8_e5m2> { using type = F8E5M2; };
template <> struct StorageOf<kInt32> { using type = int32_t; };
template <> struct StorageOf<kInt64> { using type = int64_t; };
template <> struct StorageOf<kUInt8> { using type = uint8_t; };
template <> struct StorageOf<kInt8> { using type = int8_t; };
template <> struct StorageOf<kInt16> { using type = int16_t; };
template <> struct StorageOf<kBool> { using type = Bool; };
#define TALLY_DTYPE_STORAGE_CHECK_(Name, torch_name, bytes, ...)                                              \
  static_assert(sizeof(typename StorageOf<k##Name>::type) == (bytes), "tally/table/dtypes.h: the storage type " \
                                                                       "of " #Name " has another size");
TALLY_FORALL_DTYPES(TALLY_DTYPE_STORAGE_CHECK_)
#undef TALLY_DTYPE_STORAGE_CHECK_

template <class T> struct ComputeOf { using type = T; };
template <> struct ComputeOf<__half> { using type = float; };
template <> struct ComputeOf<__nv_bfloat16> { using type = float; };
template <> struct ComputeOf<F8E4M3> { using type = float; };
template <> struct ComputeOf<F8E5M2> { using type = float; };
template <> struct ComputeOf<Bool> { using type = bool; };
template <class T> using compute_t = typename ComputeOf<T>::type;

// ---- float8 ----------------------------------------------------------------------------------

/// float -> 8-bit float, round to nearest even; NaN stays NaN, and a value that rounds past the
/// largest finite number becomes NaN (e4m3fn, which has no infinity) or infinity (e5m2). The
/// hardware conversion only saturates, and cuda_fp8.h's non-saturating one goes through double
/// in software, so this follows the CPU encoder (tally/dtype/float8.h) bit for bit instead.
template <int Mant, int Bias, bool HasInf>
__device__ __forceinline__ uint8_t encode_fp8(float f) {
  constexpr uint32_t kMaxCode = HasInf ? 0x7Bu : 0x7Eu;       // largest finite magnitude
  constexpr uint32_t kOverflowCode = HasInf ? 0x7Cu : 0x7Fu;  // infinity, or NaN without one
  const uint32_t x = __float_as_uint(f);
  const uint32_t sign = (x >> 24) & 0x80u;
  const uint32_t abs = x & 0x7FFFFFFFu;
  if (abs > 0x7F800000u) return static_cast<uint8_t>(sign | 0x7Fu);
  const int exp = static_cast<int>(abs >> 23) - 127;
  uint32_t code;
  if (exp < 1 - Bias) {
    // Subnormal in the target: count units of 2^(1-Bias-Mant). Scaling by a power of two is
    // exact, and rintf rounds to even; a count of 2^Mant is the smallest normal, same encoding.
    constexpr uint32_t kScaleBits = static_cast<uint32_t>(127 + Bias - 1 + Mant) << 23;
    code = static_cast<uint32_t>(rintf(__uint_as_float(abs) * __uint_as_float(kScaleBits)));
  } else {
    // Round exponent and mantissa together (a carry moves into the exponent), then re-bias.
    // Infinity lands above kMaxCode here and overflows like any too-large value.
    constexpr int shift = 23 - Mant;
    const uint32_t rounded = (abs + ((1u << (shift - 1)) - 1u) + ((abs >> shift) & 1u)) >> shift;
    code = rounded - (static_cast<uint32_t>(127 - Bias) << Mant);
  }
  return static_cast<uint8_t>(sign | (code > kMaxCode ? kOverflowCode : code));
}

__device__ __forceinline__ float decode_fp8(uint8_t b, __nv_fp8_interpretation_t kind) {
  return __half2float(__half(__nv_cvt_fp8_to_halfraw(b, kind)));
}

// ---- load: storage -> compute ------------------------------------------------------------------

template <class T>
__device__ __forceinline__ compute_t<T> to_compute(T x) {
  if constexpr (std::is_same_v<T, __half>) return __half2float(x);
  else if constexpr (std::is_same_v<T, __nv_bfloat16>) return __bfloat162float(x);
  else if constexpr (std::is_same_v<T, F8E4M3>) return decode_fp8(x.bits, __NV_E4M3);
  else if constexpr (std::is_same_v<T, F8E5M2>) return decode_fp8(x.bits, __NV_E5M2);
  else if constexpr (std::is_same_v<T, Bool>) return x.v != 0;  // any nonzero byte is true
  else return x;
}

// ---- store: compute value -> storage (the CPU's cast_to) -----------------------------------------

/// Convert a compute value (float, double, an integer or bool) to storage type T. Narrow floats
/// round once from float32 (a double goes through float, as on the CPU); bool is value != 0;
/// floating -> integer truncates; floating -> an 8- or 16-bit integer goes through int64 so that
/// it wraps as PyTorch's does (CUDA's direct conversion would saturate).
template <class T, class V>
__device__ __forceinline__ T from_compute(V v) {
  if constexpr (std::is_same_v<T, Bool>) return Bool{static_cast<uint8_t>(v != V(0))};
  else if constexpr (std::is_same_v<T, __half>) return __float2half_rn(static_cast<float>(v));
  else if constexpr (std::is_same_v<T, __nv_bfloat16>) return __float2bfloat16_rn(static_cast<float>(v));
  else if constexpr (std::is_same_v<T, F8E4M3>) return F8E4M3{encode_fp8<3, 7, false>(static_cast<float>(v))};
  else if constexpr (std::is_same_v<T, F8E5M2>) return F8E5M2{encode_fp8<2, 15, true>(static_cast<float>(v))};
  else if constexpr (std::is_integral_v<T> && sizeof(T) < 4 && std::is_floating_point_v<V>)
    return static_cast<T>(static_cast<int64_t>(v));
  else return static_cast<T>(v);
}

/// Store `v` as element `i` of `out`, whose dtype is only known at run time (reduction outputs:
/// one store per row, so the switch costs nothing).
template <class V>
__device__ __forceinline__ void store_as(uint8_t dtype, void* out, int64_t i, V v) {
  switch (dtype) {
#define TALLY_DTYPE_STORE_(Name, torch_name, bytes, ...)                                                        \
  case k##Name: {                                                                                         \
    using S = typename StorageOf<k##Name>::type;                                                          \
    static_cast<S*>(out)[i] = from_compute<S>(v);                                                         \
    break;                                                                                                \
  }
    TALLY_FORALL_DTYPES(TALLY_DTYPE_STORE_)
#undef TALLY_DTYPE_STORE_
    default: break;
  }
}

/// isnan for any compute type (false for integers and bool).
template <class C>
__device__ __forceinline__ bool is_nan(C v) {
  if constexpr (std::is_floating_point_v<C>) return v != v;
  else return false;
}

/// std::min is constexpr host code; device code uses this.
template <class T>
__host__ __device__ __forceinline__ T min_of(T a, T b) {
  return b < a ? b : a;
}

/// A fixed number of consecutive elements moved as one aligned access (16 bytes at most).
template <class T, int V>
struct alignas(sizeof(T) * V) Pack {
  T v[V];
};

// ---- host helpers ------------------------------------------------------------------------------

inline const char* dtype_name(uint8_t d) {
#define TALLY_DTYPE_NAME_(Name, torch_name, bytes, ...) #Name,
  static constexpr const char* kNames[] = {TALLY_FORALL_DTYPES(TALLY_DTYPE_NAME_)};
#undef TALLY_DTYPE_NAME_
  return d < kDtypeRows ? kNames[d] : "unknown dtype";
}

inline int dtype_size(uint8_t d) {
#define TALLY_DTYPE_SIZE_(Name, torch_name, bytes, ...) bytes,
  static constexpr int kSizes[] = {TALLY_FORALL_DTYPES(TALLY_DTYPE_SIZE_)};
#undef TALLY_DTYPE_SIZE_
  return d < kDtypeRows ? kSizes[d] : 0;
}

[[noreturn]] inline void unsupported(const char* what, uint8_t dtype) {
  raise_not_implemented(std::string("tally CUDA kernel ") + what + ": no kernel for dtype " + dtype_name(dtype) +
                        "; move the tensors to the CPU with .cpu() first");
}

/// The storage type for a dtype id.

/// A type passed as a value, so that plain generic lambdas can receive it (the .cu files build
/// as C++17 too, which has no lambdas with template parameter lists).
template <class T>
struct Tag {
  using type = T;
};

template <uint32_t Allowed, uint8_t Id, class Fn>
void dispatch_to(uint8_t dtype, const char* what, Fn& fn) {
  if constexpr ((Allowed >> Id) & 1u) fn(Tag<typename StorageOf<Id>::type>{});
  else unsupported(what, dtype);
}

/// Call fn(Tag<T>{}) with T the storage type of `dtype`, for the dtypes in the set `Allowed` (a
/// bit per id); others raise. Dispatch happens once per launch, on the host.
template <uint32_t Allowed, class Fn>
void dispatch(uint8_t dtype, const char* what, Fn&& fn) {
  switch (dtype) {
#define TALLY_DTYPE_DISPATCH_(Name, torch_name, bytes, ...) \
  case k##Name: return dispatch_to<Allowed, k##Name>(dtype, what, fn);
    TALLY_FORALL_DTYPES(TALLY_DTYPE_DISPATCH_)
#undef TALLY_DTYPE_DISPATCH_
    default: unsupported(what, dtype);
  }
}

/// Call fn(Tag<R>{}) with R the unsigned integer of the dtype's size, for kernels that move bits
/// only (where, fill, same-dtype copies, index_select's gather).
template <class Fn>
void dispatch_size(uint8_t dtype, const char* what, Fn&& fn) {
  switch (dtype_size(dtype)) {
    case 1: return fn(Tag<uint8_t>{});
    case 2: return fn(Tag<uint16_t>{});
    case 4: return fn(Tag<uint32_t>{});
    case 8: return fn(Tag<uint64_t>{});
    default: unsupported(what, dtype);
  }
}

constexpr uint32_t bit(uint8_t id) { return 1u << id; }
inline constexpr uint32_t kAllDtypes = (1u << kDtypeRows) - 1u;
inline constexpr uint32_t kFloatDtypes = bit(kFloat32) | bit(kFloat64) | bit(kFloat16) | bit(kBFloat16);
/// The integers: every row but the floats and bool, as tally::is_integral says.
inline constexpr uint32_t kIntDtypes =
    kAllDtypes & ~(kFloatDtypes | bit(kFloat8_e4m3fn) | bit(kFloat8_e5m2) | bit(kBool));
/// Everything but float8 (which, as in PyTorch, has no arithmetic).
inline constexpr uint32_t kArithDtypes = kFloatDtypes | kIntDtypes | bit(kBool);

/// Streaming multiprocessors of the current device, read once per device.
inline int sm_count() {
  constexpr int kMaxDevices = 64;
  static std::atomic<int> cache[kMaxDevices] = {};  // 0: not read yet
  int device = 0;
  CUDA_CHECK(cudaGetDevice(&device));
  if (device < kMaxDevices) {
    if (const int n = cache[device].load(std::memory_order_relaxed)) return n;
  }
  int n = 0;
  CUDA_CHECK(cudaDeviceGetAttribute(&n, cudaDevAttrMultiProcessorCount, device));
  if (device < kMaxDevices) cache[device].store(n, std::memory_order_relaxed);
  return n;
}

inline int64_t ceil_div(int64_t a, int64_t b) { return (a + b - 1) / b; }

/// Blocks of `threads` for a grid-stride loop over n items: a thread an item, but no more than
/// 32 blocks a multiprocessor (several waves, so that blocks finishing early are refilled);
/// beyond that each thread takes several items.
inline unsigned grid_stride_blocks(int64_t n, int threads) {
  return static_cast<unsigned>(std::clamp<int64_t>(ceil_div(n, threads), 1, int64_t{sm_count()} * 32));
}

/// body(i) for this thread's items i < n of such a grid-stride loop (kThreads threads a block).
template <int kThreads, class Body>
__device__ __forceinline__ void grid_stride(int64_t n, Body body) {
  for (int64_t i = blockIdx.x * int64_t{kThreads} + threadIdx.x; i < n; i += int64_t{gridDim.x} * kThreads) body(i);
}

// ---- math: full-precision device functions for float and double, picked by overload (never
// the __expf family) ----

__device__ __forceinline__ float abs_(float x) { return fabsf(x); }
__device__ __forceinline__ double abs_(double x) { return fabs(x); }
__device__ __forceinline__ float exp_(float x) { return expf(x); }
__device__ __forceinline__ double exp_(double x) { return exp(x); }
__device__ __forceinline__ float log_(float x) { return logf(x); }
__device__ __forceinline__ double log_(double x) { return log(x); }
__device__ __forceinline__ float tanh_(float x) { return tanhf(x); }
__device__ __forceinline__ double tanh_(double x) { return tanh(x); }
__device__ __forceinline__ float erf_(float x) { return erff(x); }
__device__ __forceinline__ double erf_(double x) { return erf(x); }
__device__ __forceinline__ float sqrt_(float x) { return sqrtf(x); }
__device__ __forceinline__ double sqrt_(double x) { return sqrt(x); }
__device__ __forceinline__ float pow_(float x, float y) { return powf(x, y); }
__device__ __forceinline__ double pow_(double x, double y) { return pow(x, y); }

}  // namespace tally::kernels::cuda::dev
