// index_select's gather and index_add's scatter of rows along a dim: a contiguous tensor seen as
// `outer` blocks of `n` rows of `inner` elements, and `k` indices, already checked and made
// non-negative on the host (the op raises the out-of-range error there, with the value).
//
// The gather copies elements by their size alone, so it serves every dtype. The scatter adds with
// atomics, one element a thread: repeated indices (an embedding's backward: many tokens, one row
// each) meet at the same address in no fixed order, so float sums may differ in their last bits
// between runs, as PyTorch's CUDA index_add_ does. Each add rounds to the element type, as on
// the CPU.

#include "tally/kernels/cuda/dtypes.cuh"
#include "tally/kernels/cuda/kernels.h"

namespace tally::kernels::cuda {

namespace {

using namespace dev;

constexpr int kThreads = 256;

/// Element e of the output (block a, index i, column j) reads row index[i] of block a.
template <class E>
__global__ void __launch_bounds__(kThreads)
gather_kernel(const E* src, E* out, const int64_t* index, int64_t total, int64_t n, int64_t k, int64_t inner) {
  grid_stride<kThreads>(total, [&](int64_t e) {
    const int64_t j = e % inner, r = e / inner, i = r % k, a = r / k;
    out[e] = src[(a * n + index[i]) * inner + j];
  });
}

__device__ __forceinline__ void atomic_add(float* p, float v) { atomicAdd(p, v); }
__device__ __forceinline__ void atomic_add(double* p, double v) { atomicAdd(p, v); }
__device__ __forceinline__ void atomic_add(__half* p, __half v) { atomicAdd(p, v); }
__device__ __forceinline__ void atomic_add(__nv_bfloat16* p, __nv_bfloat16 v) { atomicAdd(p, v); }
__device__ __forceinline__ void atomic_add(int32_t* p, int32_t v) { atomicAdd(reinterpret_cast<int*>(p), static_cast<int>(v)); }
// Two's complement: an unsigned add is the signed one, wrapping as int64 arithmetic does.
__device__ __forceinline__ void atomic_add(int64_t* p, int64_t v) {
  atomicAdd(reinterpret_cast<unsigned long long*>(p), static_cast<unsigned long long>(v));
}

/// Element e of the source (block a, index i, column j) is added to row index[i] of block a.
template <class T>
__global__ void __launch_bounds__(kThreads)
scatter_add_kernel(T* out, const int64_t* index, const T* src, int64_t total, int64_t n, int64_t k, int64_t inner) {
  grid_stride<kThreads>(total, [&](int64_t e) {
    const int64_t j = e % inner, r = e / inner, i = r % k, a = r / k;
    atomic_add(out + (a * n + index[i]) * inner + j, src[e]);
  });
}

}  // namespace

void index_select_rows(uint8_t dtype, const void* src, void* out, const int64_t* index, int64_t outer, int64_t n, int64_t k,
                       int64_t inner) {
  const int64_t total = outer * k * inner;
  if (total == 0) return;
  dispatch_size(dtype, "index_select", [&](auto t) {
    using E = typename decltype(t)::type;
    gather_kernel<E><<<grid_stride_blocks(total, kThreads), kThreads>>>(static_cast<const E*>(src), static_cast<E*>(out), index,
                                                                         total, n, k, inner);
    LAUNCH_CHECK();
  });
}

void index_add_rows(uint8_t dtype, void* out, const int64_t* index, const void* src, int64_t outer, int64_t n, int64_t k,
                    int64_t inner) {
  const int64_t total = outer * k * inner;
  if (total == 0) return;
  dispatch<kFloatDtypes | bit(kInt32) | bit(kInt64)>(dtype, "index_add", [&](auto t) {
    using T = typename decltype(t)::type;
    scatter_add_kernel<T><<<grid_stride_blocks(total, kThreads), kThreads>>>(static_cast<T*>(out), index,
                                                                              static_cast<const T*>(src), total, n, k, inner);
    LAUNCH_CHECK();
  });
}

}  // namespace tally::kernels::cuda
