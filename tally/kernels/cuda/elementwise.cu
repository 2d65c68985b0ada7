// Elementwise kernels: binary, unary, pow_scalar, clamp, where, copy and fill.
//
// Each public function picks the element types once on the host (dtypes.cuh: dispatch) and
// launches one of two kernels, templated on those types and a functor:
//  - dense_kernel, when every operand is contiguous and suitably aligned: a thread per pack of
//    V elements, each operand moved with one access of up to 16 bytes (what it
//    takes to stream at HBM bandwidth), then a scalar tail;
//  - strided_kernel otherwise: each element's byte offset in every operand comes from its
//    linear index by a divmod per dim, in 32-bit arithmetic when everything fits (then by
//    multiply and shift, and four elements per thread), else in 64-bit.
// Both launch enough blocks to cover the whole launch: on an H100 that streams faster than a
// grid of a few waves that loops (3.10 against 2.99 TB/s for x + y), and far faster for strided
// reads, whose neighbouring blocks then share cache lines (0.9 against 0.3 TB/s for a transposing
// copy). The loops are grid-stride only for launches past the grid limit.
// Inputs given inline (a number, or a 0-d CPU tensor) are one value for every element.
// Everything runs asynchronously on the legacy default stream.

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <utility>

#include "tally/kernels/cuda/dtypes.cuh"
#include "tally/kernels/cuda/kernels.h"
#include "tally/kernels/binary_math.h"
#include "tally/kernels/unary_math.h"

namespace tally::kernels::cuda {

namespace {

using namespace dev;

constexpr int kThreads = 256;

// ---- kernel side -------------------------------------------------------------------------------

/// An input as the kernels see it: device memory, or one value (raw bytes) for every element.
struct Input {
  const char* data;
  uint64_t bits;
  bool is_inline;
};

template <int N>
struct Inputs {
  Input in[N > 0 ? N : 1];  // fill has none
};

/// The launch's dims, innermost first, with each operand's byte strides (operand 0 the output).
template <int N, class Index>
struct Geometry {
  int ndim;
  Index sizes[kMaxDims];
  Index strides[kMaxDims][N];
  // 32-bit only: n / sizes[d] == (umulhi(n, magic[d]) + n) >> shift[d] for n < 2^31
  // (Granlund and Montgomery's division by an invariant, set up on the host): a few
  // instructions where the division routine takes about twenty.
  uint32_t magic[kMaxDims];
  uint32_t shift[kMaxDims];
};

template <class T>
__device__ __forceinline__ compute_t<T> inline_value(const Input& in) {
  T v;
  memcpy(&v, &in.bits, sizeof(T));
  return to_compute(v);
}

template <class T>
__device__ __forceinline__ compute_t<T> load_one(const Input& in, int64_t byte_offset) {
  if (in.is_inline) return inline_value<T>(in);
  return to_compute(*reinterpret_cast<const T*>(in.data + byte_offset));
}

template <class T, int V>
struct Values {
  compute_t<T> v[V];
};

/// Pack `p` (elements p*V .. p*V+V-1) of an input, in its compute type.
template <class T, int V>
__device__ __forceinline__ Values<T, V> load_pack(const Input& in, int64_t p) {
  Values<T, V> r;
  if (in.is_inline) {
    const compute_t<T> x = inline_value<T>(in);
#pragma unroll
    for (int j = 0; j < V; ++j) r.v[j] = x;
  } else {
    const Pack<T, V> pk = reinterpret_cast<const Pack<T, V>*>(in.data)[p];
#pragma unroll
    for (int j = 0; j < V; ++j) r.v[j] = to_compute(pk.v[j]);
  }
  return r;
}

template <class TO, int V, class F, class... Vs>
__device__ __forceinline__ void apply_pack(Pack<TO, V>& out, const F& f, const Vs&... x) {
#pragma unroll
  for (int j = 0; j < V; ++j) out.v[j] = from_compute<TO>(f(x.v[j]...));
}

template <int V, class TO, class F, class... TI, size_t... I>
__device__ __forceinline__ void dense_body(int64_t n, const F& f, char* out, const Input* in, std::index_sequence<I...>) {
  const int64_t packs = n / V;
  const int64_t first = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x;
  const int64_t step = static_cast<int64_t>(gridDim.x) * blockDim.x;
  for (int64_t p = first; p < packs; p += step) {
    Pack<TO, V> r;
    apply_pack<TO, V>(r, f, load_pack<TI, V>(in[I], p)...);
    reinterpret_cast<Pack<TO, V>*>(out)[p] = r;
  }
  for (int64_t i = packs * V + first; i < n; i += step)
    reinterpret_cast<TO*>(out)[i] = from_compute<TO>(f(load_one<TI>(in[I], i * static_cast<int64_t>(sizeof(TI)))...));
}

template <int V, class TO, class F, class... TI>
__global__ void __launch_bounds__(kThreads) dense_kernel(int64_t n, F f, char* out, Inputs<sizeof...(TI)> in) {
  dense_body<V, TO, F, TI...>(n, f, out, in.in, std::index_sequence_for<TI...>{});
}

template <class TO, class F, class... TI, class Index, size_t... I>
__device__ __forceinline__ TO strided_apply(const F& f, const Input* in, const Index* off, std::index_sequence<I...>) {
  return from_compute<TO>(f(load_one<TI>(in[I], off[I + 1])...));
}

/// Elements per thread in the 32-bit strided kernel: their loads are all issued before the first
/// store, and a block covers enough elements that block scheduling stops being the limit (a
/// broadcasting add ran at 0.7 of PyTorch's speed with one element per thread).
template <class Index>
inline constexpr int kStridedUnroll = sizeof(Index) == 4 ? 4 : 1;

template <class Index, class TO, class F, class... TI>
__global__ void __launch_bounds__(kThreads)
    strided_kernel(int64_t n, F f, char* out, Inputs<sizeof...(TI)> in, Geometry<1 + sizeof...(TI), Index> g) {
  constexpr int N = 1 + sizeof...(TI);
  constexpr int kUnroll = kStridedUnroll<Index>;
  using U = std::make_unsigned_t<Index>;
  const int64_t tile = static_cast<int64_t>(blockDim.x) * kUnroll;
  for (int64_t base = blockIdx.x * tile; base < n; base += gridDim.x * tile) {
    TO result[kUnroll];
    Index out_offset[kUnroll];
#pragma unroll
    for (int u = 0; u < kUnroll; ++u) {
      const int64_t i = base + threadIdx.x + u * static_cast<int64_t>(blockDim.x);
      if (i >= n) break;
      Index off[N] = {};
      U rem = static_cast<U>(i);
#pragma unroll
      for (int d = 0; d < kMaxDims; ++d) {
        if (d < g.ndim) {
          U c = rem;
          if (d + 1 < g.ndim) {  // the outermost coordinate is what remains: no division
            const U size = static_cast<U>(g.sizes[d]);
            U q;
            if constexpr (sizeof(Index) == 4) q = (__umulhi(rem, g.magic[d]) + rem) >> g.shift[d];
            else q = rem / size;
            c = rem - q * size;
            rem = q;
          }
#pragma unroll
          for (int k = 0; k < N; ++k) off[k] += static_cast<Index>(c) * g.strides[d][k];
        }
      }
      out_offset[u] = off[0];
      result[u] = strided_apply<TO, F, TI...>(f, in.in, off, std::index_sequence_for<TI...>{});
    }
#pragma unroll
    for (int u = 0; u < kUnroll; ++u) {
      if (base + threadIdx.x + u * static_cast<int64_t>(blockDim.x) >= n) break;
      *reinterpret_cast<TO*>(out + out_offset[u]) = result[u];
    }
  }
}

// ---- host side ---------------------------------------------------------------------------------

/// Dims innermost first, size-1 dims dropped, and neighbours merged where every operand steps
/// through them as through one dim (fewer divisions per element).
struct Dims {
  int ndim = 0;
  int64_t sizes[kMaxDims] = {};
  int64_t strides[kMaxDims][kMaxOperands] = {};
};

Dims simplify(const Launch& l) {
  Dims r;
  for (int d = l.ndim - 1; d >= 0; --d) {
    const int64_t size = l.sizes[d];
    if (size == 1) continue;
    int64_t s[kMaxOperands] = {};
    for (int k = 0; k < l.noperands; ++k) s[k] = l.op[k].is_inline ? 0 : l.op[k].strides[d];
    if (r.ndim > 0) {
      const int inner = r.ndim - 1;
      bool mergeable = true;
      for (int k = 0; k < l.noperands; ++k) mergeable &= s[k] == r.strides[inner][k] * r.sizes[inner];
      if (mergeable) {
        r.sizes[inner] *= size;
        continue;
      }
    }
    r.sizes[r.ndim] = size;
    for (int k = 0; k < l.noperands; ++k) r.strides[r.ndim][k] = s[k];
    ++r.ndim;
  }
  if (r.ndim == 0) r.ndim = 1, r.sizes[0] = 1;  // a single element
  return r;
}

/// Whether every offset (and the linear index) fits in int32.
bool fits_int32(const Dims& d, int noperands, int64_t numel) {
  if (numel > INT32_MAX) return false;
  for (int k = 0; k < noperands; ++k) {
    int64_t extent = 0;
    for (int i = 0; i < d.ndim; ++i) {
      const int64_t stride = d.strides[i][k] < 0 ? -d.strides[i][k] : d.strides[i][k];
      extent += (d.sizes[i] - 1) * stride;
    }
    if (extent > INT32_MAX) return false;
  }
  return true;
}

template <int N, class Index>
Geometry<N, Index> to_geometry(const Dims& d) {
  Geometry<N, Index> g{};
  g.ndim = d.ndim;
  for (int i = 0; i < d.ndim; ++i) {
    g.sizes[i] = static_cast<Index>(d.sizes[i]);
    if constexpr (sizeof(Index) == 4) {
      // shift: the smallest s with 2^s >= size; magic: floor(2^32 (2^s - size) / size) + 1.
      const uint64_t size = static_cast<uint64_t>(d.sizes[i]);
      uint32_t shift = 0;
      while ((uint64_t{1} << shift) < size) ++shift;
      g.shift[i] = shift;
      g.magic[i] = static_cast<uint32_t>(((uint64_t{1} << 32) * ((uint64_t{1} << shift) - size)) / size + 1);
    }
    for (int k = 0; k < N; ++k) g.strides[i][k] = static_cast<Index>(d.strides[i][k]);
  }
  return g;
}

/// Blocks for `items` threads' worth of work: all of it at once (see the top of the file).
unsigned grid_for(int64_t items) {
  return static_cast<unsigned>(std::clamp<int64_t>(ceil_div(items, kThreads), 1, INT32_MAX));
}

template <class T>
bool aligned_to(const void* p) {
  return reinterpret_cast<uintptr_t>(p) % sizeof(T) == 0;
}

/// Run out = f(in...) over the launch: operand 0 of storage type TO, operand k+1 of TI[k].
template <class TO, class... TI, class F>
void launch(const Launch& l, const F& f, const char* what) {
  constexpr int N = 1 + sizeof...(TI);
  if (l.numel <= 0) return;
  if (l.noperands != N)
    raise_error(std::string("tally CUDA kernel ") + what + ": expected " + std::to_string(N) +
                             " operands, got " + std::to_string(l.noperands));
  constexpr int kSizes[N] = {static_cast<int>(sizeof(TO)), static_cast<int>(sizeof(TI))...};
  for (int k = 0; k < N; ++k) {
    if (dtype_size(l.op[k].dtype) != kSizes[k])
      raise_error(std::string("tally CUDA kernel ") + what + ": operand " + std::to_string(k) +
                               " has dtype " + dtype_name(l.op[k].dtype) + ", not the one dispatched");
  }
  if (l.op[0].is_inline || l.op[0].data == nullptr)
    raise_error(std::string("tally CUDA kernel ") + what + ": the output has no device memory");

  Inputs<N - 1> in{};
  for (int k = 1; k < N; ++k) {
    Input& x = in.in[k - 1];
    x.data = l.op[k].data;
    x.is_inline = l.op[k].is_inline;
    std::memcpy(&x.bits, l.op[k].inline_value, sizeof(x.bits));
  }
  char* out = l.op[0].data;

  // Elements per pack: as many as fit 16 bytes of the widest operand.
  constexpr int V = 16 / static_cast<int>(std::max({sizeof(TO), sizeof(TI)...}));
  if (l.dense) {
    bool aligned = aligned_to<Pack<TO, V>>(out);
    int k = 0;
    ((aligned &= in.in[k].is_inline || aligned_to<Pack<TI, V>>(in.in[k].data), ++k), ...);
    if (aligned) {
      dense_kernel<V, TO, F, TI...><<<grid_for(ceil_div(l.numel, V)), kThreads>>>(l.numel, f, out, in);
      LAUNCH_CHECK();
      return;
    }
  }
  Dims d;
  if (l.dense) {  // contiguous but not aligned for packs: one dim, no division
    d.ndim = 1;
    d.sizes[0] = l.numel;
    d.strides[0][0] = sizeof(TO);
    int k = 1;
    ((d.strides[0][k] = l.op[k].is_inline ? 0 : static_cast<int64_t>(sizeof(TI)), ++k), ...);
  } else {
    d = simplify(l);
  }
  if (fits_int32(d, N, l.numel)) {
    strided_kernel<int32_t, TO, F, TI...><<<grid_for(ceil_div(l.numel, kStridedUnroll<int32_t>)), kThreads>>>(
        l.numel, f, out, in, to_geometry<N, int32_t>(d));
  } else {
    strided_kernel<int64_t, TO, F, TI...><<<grid_for(l.numel), kThreads>>>(l.numel, f, out, in,
                                                                           to_geometry<N, int64_t>(d));
  }
  LAUNCH_CHECK();
}

// ---- math (the float/double overloads are in dtypes.cuh) ----

// ---- functors ----------------------------------------------------------------------------------

/// A binary op's scalar rule (kernels/binary_math.h), the CPU kernels' own expression.
template <class Math>
struct BinaryF {
  template <class C>
  __device__ __forceinline__ C operator()(C a, C b) const { return Math::template f<C>(a, b); }
};

/// The comparison rows share one kernel per dtype, choosing by a launch-wide value: the branch
/// is uniform and costs nothing next to the memory traffic, and it saves five sixths of their
/// instantiations (compile time).
struct CompareF {
  BinaryOp op;
  template <class C>
  __device__ __forceinline__ bool operator()(C a, C b) const {
    switch (op) {
#define TALLY_COMPARE_CASE_(fn, Name, what)                                                              \
  case BinaryOp::Name:                                                                                  \
    if constexpr (Name##Math::rule == BinaryRule::Compare) return Name##Math::template f<C>(a, b); \
    break;
      TALLY_FORALL_BINARY_OPS(TALLY_COMPARE_CASE_)
#undef TALLY_COMPARE_CASE_
      default: break;
    }
    return false;  // not a comparison: binary_with sends only comparisons here
  }
};

/// A unary op's scalar rule (kernels/unary_math.h), the CPU kernels' own expression.
template <class Math>
struct UnaryF {
  template <class C>
  __device__ __forceinline__ C operator()(C x) const { return Math::template f<C>(x); }
};

struct IdentityF {
  template <class C>
  __device__ __forceinline__ C operator()(C x) const { return x; }
};

template <class C>
struct ClampF {
  C lo, hi;
  bool has_lo, has_hi;
  __device__ __forceinline__ C operator()(C v) const {
    if (is_nan(v)) return v;
    if (has_lo && v < lo) v = lo;
    if (has_hi && v > hi) v = hi;  // after lo: with lo > hi everything becomes hi
    return v;
  }
};

struct SquareF {
  template <class C>
  __device__ __forceinline__ C operator()(C v) const { return v * v; }
};
struct SqrtF {
  template <class C>
  __device__ __forceinline__ C operator()(C v) const { return sqrt_(v); }
};
template <class C>
struct PowF {
  C e;
  __device__ __forceinline__ C operator()(C v) const { return pow_(v, e); }
};
struct IntPowF {
  int64_t e;
  template <class C>
  __device__ __forceinline__ C operator()(C v) const { return kernels::int_pow(v, e); }
};

/// A number as the compute type C, as Scalar::to<C> converts it (integers through int64; bool
/// tests for nonzero).
template <class C>
C scalar_as(double v) {
  if constexpr (std::is_integral_v<C> && !std::is_same_v<C, bool>) return static_cast<C>(static_cast<int64_t>(v));
  else return static_cast<C>(v);
}

template <class C>
struct AddcmulF {
  C value;
  __device__ __forceinline__ C operator()(C self, C t1, C t2) const { return static_cast<C>(self + value * t1 * t2); }
};
template <class C>
struct AddcdivF {
  C value;
  __device__ __forceinline__ C operator()(C self, C t1, C t2) const { return self + value * (t1 / t2); }
};
template <class C>
struct LerpF {
  C w;
  __device__ __forceinline__ C operator()(C a, C b) const {
    return abs_(w) < C(0.5) ? a + w * (b - a) : b - (b - a) * (C(1) - w);
  }
};

struct WhereF {
  template <class C>
  __device__ __forceinline__ C operator()(uint8_t cond, C a, C b) const { return cond ? a : b; }
};

template <class R>
struct FillF {
  R value;
  __device__ __forceinline__ R operator()() const { return value; }
};

// ---- per-op dispatch ---------------------------------------------------------------------------

/// Operands `first`.. (up to the launch's count) must have dtype `id`: launch() checks only sizes.
void expect_dtype(const Launch& l, int first, int last, uint8_t id, const char* what) {
  for (int k = first; k <= last && k < l.noperands; ++k) {
    if (l.op[k].dtype != id)
      raise_error(std::string("tally CUDA kernel ") + what + ": operand " + std::to_string(k) +
                               " is " + dtype_name(l.op[k].dtype) + ", expected " + dtype_name(id));
  }
}

void compare(BinaryOp op, const Launch& l) {
  expect_dtype(l, 0, 0, kBool, "compare");
  expect_dtype(l, 2, 2, l.op[1].dtype, "compare");
  dispatch<kArithDtypes>(l.op[1].dtype, "compare", [&](auto t) {
    using T = typename decltype(t)::type;
    launch<Bool, T, T>(l, CompareF{op}, "compare");
  });
}

/// A binary op's kernel: comparisons share theirs (CompareF); the others take what their rule
/// leaves after the op has promoted the operands (div: integers became float32).
template <class Math>
void binary_with(BinaryOp op, const Launch& l) {
  if constexpr (Math::rule == BinaryRule::Compare) {
    compare(op, l);
  } else {
    constexpr uint32_t kAllowed = Math::rule == BinaryRule::PromoteToFloat ? kFloatDtypes : kArithDtypes;
    expect_dtype(l, 0, 2, l.op[1].dtype, "binary");
    dispatch<kAllowed>(l.op[1].dtype, "binary", [&](auto t) {
      using T = typename decltype(t)::type;
      launch<T, T, T>(l, BinaryF<Math>{}, "binary");
    });
  }
}

/// The dtypes a unary kernel takes: what its input rule leaves after the op has promoted
/// integers to float32 where the rule says so (ops/unary.cpp).
template <class Math>
constexpr uint32_t unary_dtypes() {
  switch (Math::input) {
    case InputRule::Any: return kArithDtypes;
    case InputRule::Negatable:  // neg of bool is refused; of uint8 it wraps
    case InputRule::NoBool:
    case InputRule::BoolToLong: return kFloatDtypes | kIntDtypes;
    case InputRule::IntToFloat:
    case InputRule::FloatOnly: return kFloatDtypes;
  }
  return 0;
}

template <class Math>
void unary_with(const Launch& l) {
  expect_dtype(l, 0, 1, l.op[1].dtype, "unary");
  dispatch<unary_dtypes<Math>()>(l.op[1].dtype, "unary", [&](auto t) {
    using T = typename decltype(t)::type;
    launch<T, T>(l, UnaryF<Math>{}, "unary");
  });
}

}  // namespace

void binary(BinaryOp op, const Launch& l) {
  switch (op) {
    case BinaryOp::Add: return binary_with<AddMath>(op, l);
    case BinaryOp::Sub: return binary_with<SubMath>(op, l);
#define TALLY_BINARY_CASE_(fn, Name, what) \
  case BinaryOp::Name: return binary_with<Name##Math>(op, l);
    TALLY_FORALL_BINARY_OPS(TALLY_BINARY_CASE_)
#undef TALLY_BINARY_CASE_
  }
  raise_error("tally CUDA kernel binary: unknown op");
}

void unary(UnaryOp op, const Launch& l) {
  switch (op) {
#define TALLY_UNARY_CASE_(fn, Name, what) \
  case UnaryOp::Name: return unary_with<Name##Math>(l);
    TALLY_FORALL_UNARY_OPS(TALLY_UNARY_CASE_)
#undef TALLY_UNARY_CASE_
    case UnaryOp::GeluErf: return unary_with<GeluErfMath>(l);
    case UnaryOp::GeluTanh: return unary_with<GeluTanhMath>(l);
  }
  raise_error("tally CUDA kernel unary: unknown op");
}

void pow_scalar(const Launch& l, double e) {
  expect_dtype(l, 0, 1, l.op[1].dtype, "pow");
  dispatch<kArithDtypes>(l.op[1].dtype, "pow", [&](auto t) {
    using T = typename decltype(t)::type;
    using C = compute_t<T>;
    if constexpr (std::is_floating_point_v<C>) {
      // The exact forms the CPU uses for the common exponents.
      if (e == 2.0) launch<T, T>(l, SquareF{}, "pow");
      else if (e == 0.5) launch<T, T>(l, SqrtF{}, "pow");
      else launch<T, T>(l, PowF<C>{static_cast<C>(e)}, "pow");
    } else {
      launch<T, T>(l, IntPowF{static_cast<int64_t>(e)}, "pow");
    }
  });
}

void clamp(const Launch& l, bool has_lo, double lo, bool has_hi, double hi) {
  expect_dtype(l, 0, 1, l.op[1].dtype, "clamp");
  dispatch<kArithDtypes>(l.op[1].dtype, "clamp", [&](auto t) {
    using T = typename decltype(t)::type;
    using C = compute_t<T>;
    // Integer bounds go through int64 as the CPU's Scalar::to does (-1 becomes 255 for uint8).
    const C clo = has_lo ? scalar_as<C>(lo) : C(0), chi = has_hi ? scalar_as<C>(hi) : C(0);
    launch<T, T>(l, ClampF<C>{clo, chi, has_lo, has_hi}, "clamp");
  });
}

void pointwise(PointwiseOp op, const Launch& l, double value) {
  expect_dtype(l, 1, 3, l.op[0].dtype, "pointwise");
  if (op == PointwiseOp::Addcmul) {
    dispatch<kFloatDtypes | kIntDtypes>(l.op[0].dtype, "addcmul", [&](auto t) {
      using T = typename decltype(t)::type;
      launch<T, T, T, T>(l, AddcmulF<compute_t<T>>{scalar_as<compute_t<T>>(value)}, "addcmul");
    });
  } else {
    dispatch<kFloatDtypes>(l.op[0].dtype, "addcdiv", [&](auto t) {
      using T = typename decltype(t)::type;
      launch<T, T, T, T>(l, AddcdivF<compute_t<T>>{scalar_as<compute_t<T>>(value)}, "addcdiv");
    });
  }
}

void lerp(const Launch& l, double weight) {
  expect_dtype(l, 1, 2, l.op[0].dtype, "lerp");
  dispatch<kFloatDtypes>(l.op[0].dtype, "lerp", [&](auto t) {
    using T = typename decltype(t)::type;
    launch<T, T, T>(l, LerpF<compute_t<T>>{static_cast<compute_t<T>>(weight)}, "lerp");
  });
}

void where(const Launch& l) {
  if (l.noperands == 4 && l.op[1].dtype != kBool && l.op[1].dtype != kUInt8)
    unsupported("where (condition)", l.op[1].dtype);
  expect_dtype(l, 2, 3, l.op[0].dtype, "where");
  // The condition is read as bytes (bool or uint8, nonzero is true); the values only move.
  dispatch_size(l.op[0].dtype, "where", [&](auto t) {
    using R = typename decltype(t)::type;
    launch<R, uint8_t, R, R>(l, WhereF{}, "where");
  });
}

void copy(const Launch& l) {
  if (l.noperands == 2 && l.op[0].dtype == l.op[1].dtype) {  // same dtype: move bits (keeps NaN payloads)
    dispatch_size(l.op[0].dtype, "copy", [&](auto t) {
      using R = typename decltype(t)::type;
      launch<R, R>(l, IdentityF{}, "copy");
    });
    return;
  }
  dispatch<kAllDtypes>(l.op[0].dtype, "copy", [&](auto to) {
    using TO = typename decltype(to)::type;
    dispatch<kAllDtypes>(l.op[1].dtype, "copy", [&](auto ti) {
      using TI = typename decltype(ti)::type;
      if constexpr (!std::is_same_v<TO, TI>) launch<TO, TI>(l, IdentityF{}, "copy");
    });
  });
}

void fill(const Launch& l, const unsigned char value[8]) {
  dispatch_size(l.op[0].dtype, "fill", [&](auto t) {
    using R = typename decltype(t)::type;
    R v;
    std::memcpy(&v, value, sizeof(R));
    launch<R>(l, FillF<R>{v}, "fill");
  });
}

}  // namespace tally::kernels::cuda
