// Softmax and log-softmax over contiguous rows.
//
// Rows of up to 8192 elements are read once into registers and written once (memory traffic of
// a copy): a warp per row up to 1024 elements, a block per row beyond. Longer rows take an
// online pass that keeps a running (max, sum of exp) per thread, then a pass that writes.
// float32 and the 16-bit floats compute in float32, float64 in float64.
//
// As on the CPU, a row whose max is -inf uses 0 instead, so an all -inf row gives 0/0 = NaN
// (log-softmax: -inf - -inf = NaN) rather than a special case.

#include <algorithm>

#include "tally/kernels/cuda/dtypes.cuh"
#include "tally/kernels/cuda/kernels.h"

namespace tally::kernels::cuda {

namespace {

using namespace dev;

constexpr int kBlock = 256;
constexpr int kWarpRowsPerBlock = 4;  // the warp kernel's blocks: 128 threads
constexpr int kMaxPerThread = 32;     // register-cached elements per thread
constexpr unsigned kFullMask = 0xFFFFFFFFu;

template <class T>
using acc_t = std::conditional_t<std::is_same_v<T, double>, double, float>;

__device__ __forceinline__ float max_(float a, float b) { return fmaxf(a, b); }
__device__ __forceinline__ double max_(double a, double b) { return fmax(a, b); }

template <class A>
__device__ __forceinline__ A neg_inf() {
  if constexpr (std::is_same_v<A, float>) return -__int_as_float(0x7F800000);
  else return -__longlong_as_double(0x7FF0000000000000LL);
}

struct MaxOp {
  template <class A>
  __device__ A operator()(A a, A b) const { return max_(a, b); }
};
struct SumOp {
  template <class A>
  __device__ A operator()(A a, A b) const { return a + b; }
};

/// Reduce over the GROUP threads of a row (a warp, or the whole block through `smem`); every
/// thread gets the result.
template <int GROUP, class A, class Op>
__device__ __forceinline__ A group_all_reduce(A v, Op op, A* smem) {
#pragma unroll
  for (int offset = 16; offset > 0; offset >>= 1) v = op(v, __shfl_xor_sync(kFullMask, v, offset));
  if constexpr (GROUP > 32) {
    constexpr int kWarps = GROUP / 32;
    if (threadIdx.x % 32 == 0) smem[threadIdx.x / 32] = v;
    __syncthreads();
    v = smem[0];
#pragma unroll
    for (int w = 1; w < kWarps; ++w) v = op(v, smem[w]);
  }
  return v;
}

/// Rows of n <= GROUP * EPT elements held in registers: thread t of a row holds packs
/// t, t + GROUP, ... of V elements (V > 1 only when rows are 16-byte aligned and n % V == 0).
template <class T, int V, int EPT, int GROUP>
__global__ void __launch_bounds__(GROUP == 32 ? 32 * kWarpRowsPerBlock : GROUP)
    softmax_cached_kernel(const T* x, T* y, int64_t rows, int64_t n, bool log) {
  using A = acc_t<T>;
  constexpr int kPacks = EPT / V;
  constexpr int kRowsPerBlock = GROUP == 32 ? kWarpRowsPerBlock : 1;
  __shared__ A smem_max[GROUP / 32], smem_sum[GROUP / 32];  // separate: no barrier between uses
  const int t = threadIdx.x % GROUP;
  // The row loop's bound is uniform over each row's group, which is all that shuffles and
  // barriers need (a block's rows are either all in range, or the group is a warp).
  for (int64_t row = static_cast<int64_t>(blockIdx.x) * kRowsPerBlock + threadIdx.x / GROUP; row < rows;
       row += static_cast<int64_t>(gridDim.x) * kRowsPerBlock) {
    const T* xr = x + row * n;
    T* yr = y + row * n;
    A v[EPT];
#pragma unroll
    for (int k = 0; k < kPacks; ++k) {
      const int64_t i = static_cast<int64_t>(k * GROUP + t) * V;
      if (i < n) {
        const Pack<T, V> pk = *reinterpret_cast<const Pack<T, V>*>(xr + i);
#pragma unroll
        for (int j = 0; j < V; ++j) v[k * V + j] = static_cast<A>(to_compute(pk.v[j]));
      } else {
#pragma unroll
        for (int j = 0; j < V; ++j) v[k * V + j] = neg_inf<A>();
      }
    }
    A m = v[0];
#pragma unroll
    for (int e = 1; e < EPT; ++e) m = max_(m, v[e]);
    m = group_all_reduce<GROUP>(m, MaxOp{}, smem_max);
    if (m == neg_inf<A>()) m = A(0);
    A s = 0;
#pragma unroll
    for (int e = 0; e < EPT; ++e) {
      const A ex = exp_(v[e] - m);  // 0 for the -inf padding
      s += ex;
      if (!log) v[e] = ex;
    }
    s = group_all_reduce<GROUP>(s, SumOp{}, smem_sum);
    const A shift = m + log_(s), inv = A(1) / s;
#pragma unroll
    for (int k = 0; k < kPacks; ++k) {
      const int64_t i = static_cast<int64_t>(k * GROUP + t) * V;
      if (i < n) {
        Pack<T, V> pk;
#pragma unroll
        for (int j = 0; j < V; ++j) pk.v[j] = from_compute<T>(log ? v[k * V + j] - shift : v[k * V + j] * inv);
        *reinterpret_cast<Pack<T, V>*>(yr + i) = pk;
      }
    }
  }
}

/// Running (max, sum of exp(x - max)); a max of -inf means nothing finite yet and a sum of 0.
template <class A>
struct Online {
  A m, s;
};

template <class A>
__device__ __forceinline__ Online<A> merge(Online<A> a, Online<A> b) {
  const A m = max_(a.m, b.m);
  if (m == neg_inf<A>()) return {m, a.s + b.s};
  return {m, a.s * exp_(a.m - m) + b.s * exp_(b.m - m)};
}

/// Long rows: a block per row, one pass for (max, sum), one to write. Packs when aligned (V > 1).
template <class T, int V>
__global__ void __launch_bounds__(kBlock) softmax_online_kernel(const T* x, T* y, int64_t rows, int64_t n, bool log) {
  using A = acc_t<T>;
  constexpr int kWarps = kBlock / 32;
  __shared__ A smem_m[kWarps], smem_s[kWarps];
  const int64_t npacks = n / V;  // the host makes n % V == 0
  for (int64_t row = blockIdx.x; row < rows; row += gridDim.x) {
    const auto* xr = reinterpret_cast<const Pack<T, V>*>(x + row * n);
    auto* yr = reinterpret_cast<Pack<T, V>*>(y + row * n);
    Online<A> acc{neg_inf<A>(), A(0)};
    for (int64_t k = threadIdx.x; k < npacks; k += kBlock) {
      const Pack<T, V> pk = xr[k];
      A v[V];
      A pm = neg_inf<A>();
#pragma unroll
      for (int j = 0; j < V; ++j) pm = max_(pm, v[j] = static_cast<A>(to_compute(pk.v[j])));
      const A m = max_(acc.m, pm);
      if (m == neg_inf<A>()) continue;  // only -inf (or NaN, which the write pass turns to NaN) so far
      A s = acc.s * exp_(acc.m - m);
#pragma unroll
      for (int j = 0; j < V; ++j) s += exp_(v[j] - m);
      acc = {m, s};
    }
    // Block-wide merge; every thread ends with the row's (max, sum).
#pragma unroll
    for (int offset = 16; offset > 0; offset >>= 1)
      acc = merge(acc, Online<A>{__shfl_xor_sync(kFullMask, acc.m, offset), __shfl_xor_sync(kFullMask, acc.s, offset)});
    if (threadIdx.x % 32 == 0) smem_m[threadIdx.x / 32] = acc.m, smem_s[threadIdx.x / 32] = acc.s;
    __syncthreads();
    acc = {smem_m[0], smem_s[0]};
#pragma unroll
    for (int w = 1; w < kWarps; ++w) acc = merge(acc, Online<A>{smem_m[w], smem_s[w]});
    __syncthreads();  // smem is rewritten for the next row
    const A m = acc.m == neg_inf<A>() ? A(0) : acc.m;
    const A shift = m + log_(acc.s), inv = A(1) / acc.s;
    for (int64_t k = threadIdx.x; k < npacks; k += kBlock) {
      const Pack<T, V> pk = xr[k];
      Pack<T, V> out;
#pragma unroll
      for (int j = 0; j < V; ++j) {
        const A v = static_cast<A>(to_compute(pk.v[j]));
        out.v[j] = from_compute<T>(log ? v - shift : exp_(v - m) * inv);
      }
      yr[k] = out;
    }
  }
}

/// Every block launched at once (on an H100 a full grid beats a looping one for streaming work).
unsigned grid(int64_t blocks) { return static_cast<unsigned>(std::clamp<int64_t>(blocks, 1, INT32_MAX)); }

/// Elements per thread for the cached kernels: the smallest power of two >= need, at least V.
template <class T, int V, int GROUP>
void launch_cached(const T* x, T* y, int64_t rows, int64_t n, bool log) {
  const int64_t need = ceil_div(n, GROUP);
  const unsigned threads = GROUP == 32 ? 32 * kWarpRowsPerBlock : GROUP;
  const unsigned blocks = grid(ceil_div(rows, GROUP == 32 ? kWarpRowsPerBlock : 1));
  auto go = [&](auto ept) {
    constexpr int EPT = decltype(ept)::value;
    // A block-per-row launch has n > 1024, so at least 8 elements per thread: no smaller kernels.
    if constexpr (EPT >= V && (GROUP == 32 || EPT >= 8))
      softmax_cached_kernel<T, V, EPT, GROUP><<<blocks, threads>>>(x, y, rows, n, log);
  };
  if (need <= 1 && V <= 1) go(std::integral_constant<int, 1>{});
  else if (need <= 2 && V <= 2) go(std::integral_constant<int, 2>{});
  else if (need <= 4 && V <= 4) go(std::integral_constant<int, 4>{});
  else if (need <= 8) go(std::integral_constant<int, 8>{});
  else if (need <= 16) go(std::integral_constant<int, 16>{});
  else go(std::integral_constant<int, 32>{});
  LAUNCH_CHECK();
}

template <class T, int V>
void launch_rows(const T* x, T* y, int64_t rows, int64_t n, bool log) {
  if (n <= 32 * kMaxPerThread) {
    launch_cached<T, V, 32>(x, y, rows, n, log);
  } else if (n <= kBlock * kMaxPerThread) {
    launch_cached<T, V, kBlock>(x, y, rows, n, log);
  } else {
    softmax_online_kernel<T, V><<<grid(rows), kBlock>>>(x, y, rows, n, log);
    LAUNCH_CHECK();
  }
}

}  // namespace

void softmax_rows(uint8_t dtype, const void* x, void* y, int64_t rows, int64_t n, bool log) {
  if (rows <= 0 || n <= 0) return;
  dispatch<kFloatDtypes>(dtype, "softmax_rows", [&](auto t) {
    using T = typename decltype(t)::type;
    constexpr int V = 16 / sizeof(T);
    const T* px = static_cast<const T*>(x);
    T* py = static_cast<T*>(y);
    // Packs need every row to start on a 16-byte boundary.
    const bool packed = n % V == 0 && reinterpret_cast<uintptr_t>(x) % 16 == 0 && reinterpret_cast<uintptr_t>(y) % 16 == 0;
    if (packed) launch_rows<T, V>(px, py, rows, n, log);
    else launch_rows<T, 1>(px, py, rows, n, log);
  });
}

}  // namespace tally::kernels::cuda
