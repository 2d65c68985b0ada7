// Row reductions: sum, prod, amax, amin, argmax, argmin, any, all over `outer` contiguous rows
// of `inner` elements.
//
// A reducer (below) folds compute values into an accumulator, combines two accumulators, and
// shuffles one across lanes. Rows of up to 1024 elements get a group of lanes each, sized for
// about four 16-byte packs per lane (a warp at most; a single thread for 16 floats), so a block
// covers many rows; longer rows get a block each, and when there are too few rows to fill the
// GPU each row is split into chunks whose partial results a second kernel combines. Within a
// slice every thread reads 16-byte packs.
//
// Accumulation follows PyTorch's CUDA kernels: float32 for float32 and the 16-bit floats,
// float64 for float64, int64 for integers and bool.

#include <algorithm>

#include "tally/kernels/cuda/dtypes.cuh"
#include "tally/kernels/cuda/kernels.h"

namespace tally::kernels::cuda {

namespace {

using namespace dev;

constexpr int kBlock = 256;
constexpr int kWarps = kBlock / 32;
constexpr unsigned kFullMask = 0xFFFFFFFFu;

/// __shfl_down_sync for every accumulator field type (bool and bytes travel as int).
template <class V>
__device__ __forceinline__ V shfl_down(V v, int offset, int width) {
  if constexpr (std::is_same_v<V, bool>) return __shfl_down_sync(kFullMask, static_cast<int>(v), offset, width) != 0;
  else if constexpr (sizeof(V) < 4) return static_cast<V>(__shfl_down_sync(kFullMask, static_cast<int>(v), offset, width));
  else return __shfl_down_sync(kFullMask, v, offset, width);
}

template <class C>
__device__ __forceinline__ C lowest() {
  if constexpr (std::is_same_v<C, float>) return -__int_as_float(0x7F800000);
  else if constexpr (std::is_same_v<C, double>) return -__longlong_as_double(0x7FF0000000000000LL);
  else if constexpr (std::is_same_v<C, bool>) return false;
  else if constexpr (std::is_unsigned_v<C>) return C(0);
  else return static_cast<C>(C(1) << (sizeof(C) * 8 - 1));  // two's complement minimum
}

template <class C>
__device__ __forceinline__ C highest() {
  if constexpr (std::is_same_v<C, float>) return __int_as_float(0x7F800000);
  else if constexpr (std::is_same_v<C, double>) return __longlong_as_double(0x7FF0000000000000LL);
  else if constexpr (std::is_same_v<C, bool>) return true;
  else return static_cast<C>(~lowest<C>());
}

template <class C>
using sum_acc_t = std::conditional_t<std::is_same_v<C, double>, double,
                                     std::conditional_t<std::is_floating_point_v<C>, float, int64_t>>;

// ---- reducers ----------------------------------------------------------------------------------
// init() is the identity of combine(), so lanes with nothing to read can join every combine.

template <class C, bool Prod>
struct SumProdR {
  using Acc = sum_acc_t<C>;
  __device__ Acc init() const { return Prod ? Acc(1) : Acc(0); }
  __device__ Acc step(Acc a, C v, int64_t) const { return combine(a, static_cast<Acc>(v)); }
  __device__ Acc combine(Acc a, Acc b) const { return Prod ? a * b : a + b; }
  __device__ Acc shfl(Acc a, int offset, int width) const { return shfl_down(a, offset, width); }
  __device__ Acc result(Acc a) const { return a; }
};

/// amax/amin: NaN wins and sticks.
template <class C, bool Max>
struct ExtremeR {
  using Acc = C;
  __device__ Acc init() const { return Max ? lowest<C>() : highest<C>(); }
  __device__ Acc step(Acc a, C v, int64_t) const { return combine(a, v); }
  __device__ Acc combine(Acc a, Acc b) const {
    if (is_nan(a)) return a;
    if (is_nan(b)) return b;
    return (Max ? b > a : b < a) ? b : a;
  }
  __device__ Acc shfl(Acc a, int offset, int width) const { return shfl_down(a, offset, width); }
  __device__ Acc result(Acc a) const { return a; }
};

/// argmax/argmin: the first index of the extreme; NaN counts as the extreme (the first NaN wins).
/// Ties go to the smaller index, so the order in which lanes combine does not matter.
template <class C, bool Max>
struct ArgR {
  struct Acc {
    C value;
    int64_t index;  // -1: nothing seen
  };
  __device__ Acc init() const { return {C{}, -1}; }
  // Within a thread indices only increase, so a tie keeps the earlier element: cheaper than combine.
  __device__ Acc step(Acc a, C v, int64_t i) const {
    if (a.index >= 0 && (is_nan(a.value) || !(is_nan(v) || (Max ? v > a.value : v < a.value)))) return a;
    return {v, i};
  }
  __device__ Acc combine(Acc a, Acc b) const {
    if (a.index < 0) return b;
    if (b.index < 0) return a;
    const bool an = is_nan(a.value), bn = is_nan(b.value);
    if (an || bn) {
      if (an && bn) return a.index <= b.index ? a : b;
      return an ? a : b;
    }
    if (Max ? b.value > a.value : b.value < a.value) return b;
    if (b.value == a.value && b.index < a.index) return b;
    return a;
  }
  __device__ Acc shfl(Acc a, int offset, int width) const {
    return {shfl_down(a.value, offset, width), shfl_down(a.index, offset, width)};
  }
  __device__ int64_t result(Acc a) const { return a.index; }
};

template <class C, bool Any>
struct LogicalR {
  using Acc = bool;
  __device__ Acc init() const { return !Any; }
  __device__ Acc step(Acc a, C v, int64_t) const { return combine(a, v != C(0)); }
  __device__ Acc combine(Acc a, Acc b) const { return Any ? (a || b) : (a && b); }
  __device__ Acc shfl(Acc a, int offset, int width) const { return shfl_down(a, offset, width); }
  __device__ Acc result(Acc a) const { return a; }
};

// ---- kernels -----------------------------------------------------------------------------------

/// This thread's share (tid, tid + nthreads, ...) of the n elements at p, whose indices in the row
/// start at `base`: a scalar head up to the first 16-byte boundary, 16-byte packs, a scalar tail.
template <class T, class R>
__device__ __forceinline__ typename R::Acc fold_slice(const T* p, int64_t n, int64_t base, int tid, int nthreads,
                                                      const R& r) {
  constexpr int V = 16 / sizeof(T);
  typename R::Acc acc = r.init();
  const int64_t head = min_of<int64_t>(n, (16 - reinterpret_cast<uintptr_t>(p) % 16) % 16 / sizeof(T));
  for (int64_t i = tid; i < head; i += nthreads) acc = r.step(acc, to_compute(p[i]), base + i);
  const auto* packs = reinterpret_cast<const Pack<T, V>*>(p + head);
  const int64_t npacks = (n - head) / V;
#pragma unroll 4
  for (int64_t k = tid; k < npacks; k += nthreads) {
    const Pack<T, V> pk = packs[k];
#pragma unroll
    for (int j = 0; j < V; ++j) acc = r.step(acc, to_compute(pk.v[j]), base + head + k * V + j);
  }
  for (int64_t i = head + npacks * V + tid; i < n; i += nthreads) acc = r.step(acc, to_compute(p[i]), base + i);
  return acc;
}

/// Rows of at most 1024 elements: 2^group_log2 lanes per row (group_log2 <= 5).
template <class T, class R>
__global__ void __launch_bounds__(kBlock)
    reduce_group_kernel(const T* in, int64_t outer, int64_t inner, int group_log2, void* out, uint8_t out_dtype, R r) {
  const int group = 1 << group_log2;
  const int lane = threadIdx.x & (group - 1);
  const int64_t rows_per_block = kBlock >> group_log2;
  // The loop bound is the same for the whole block, so every lane reaches every shuffle.
  for (int64_t first = blockIdx.x * rows_per_block; first < outer; first += gridDim.x * rows_per_block) {
    const int64_t row = first + (threadIdx.x >> group_log2);
    typename R::Acc acc = r.init();
    if (row < outer) acc = fold_slice(in + row * inner, inner, 0, lane, group, r);
    for (int offset = group / 2; offset > 0; offset >>= 1) acc = r.combine(acc, r.shfl(acc, offset, group));
    if (row < outer && lane == 0) store_as(out_dtype, out, row, r.result(acc));
  }
}

/// Combine a block's accumulators; the result is valid in thread 0.
template <class R>
__device__ __forceinline__ typename R::Acc block_combine(typename R::Acc acc, const R& r, typename R::Acc* smem) {
  const int warp = threadIdx.x / 32, lane = threadIdx.x % 32;
  for (int offset = 16; offset > 0; offset >>= 1) acc = r.combine(acc, r.shfl(acc, offset, 32));
  if (lane == 0) smem[warp] = acc;
  __syncthreads();
  if (warp == 0) {
    acc = lane < kWarps ? smem[lane] : r.init();
    for (int offset = kWarps / 2; offset > 0; offset >>= 1) acc = r.combine(acc, r.shfl(acc, offset, 32));
  }
  __syncthreads();  // smem is reused by the next slice
  return acc;
}

/// Long rows: a block per (row, chunk). With `partial` each chunk's accumulator goes there for
/// combine_kernel; without, chunks == 1 and the block stores the row's result.
template <class T, class R>
__global__ void __launch_bounds__(kBlock)
    reduce_block_kernel(const T* in, int64_t outer, int64_t inner, int64_t chunk, int64_t chunks, void* out,
                        uint8_t out_dtype, typename R::Acc* partial, R r) {
  __shared__ typename R::Acc smem[kWarps];
  for (int64_t b = blockIdx.x; b < outer * chunks; b += gridDim.x) {
    const int64_t row = b / chunks, begin = b % chunks * chunk;
    const int64_t len = min_of(chunk, inner - begin);
    typename R::Acc acc = fold_slice(in + row * inner + begin, len, begin, threadIdx.x, kBlock, r);
    acc = block_combine(acc, r, smem);
    if (threadIdx.x == 0) {
      if (partial) partial[b] = acc;
      else store_as(out_dtype, out, row, r.result(acc));
    }
  }
}

/// A warp per row folds the row's chunk accumulators.
template <class R>
__global__ void __launch_bounds__(kBlock)
    combine_kernel(const typename R::Acc* partial, int64_t outer, int64_t chunks, void* out, uint8_t out_dtype, R r) {
  const int lane = threadIdx.x % 32;
  for (int64_t first = blockIdx.x * kWarps; first < outer; first += gridDim.x * kWarps) {
    const int64_t row = first + threadIdx.x / 32;
    typename R::Acc acc = r.init();
    if (row < outer)
      for (int64_t k = lane; k < chunks; k += 32) acc = r.combine(acc, partial[row * chunks + k]);
    for (int offset = 16; offset > 0; offset >>= 1) acc = r.combine(acc, r.shfl(acc, offset, 32));
    if (row < outer && lane == 0) store_as(out_dtype, out, row, r.result(acc));
  }
}

// ---- host --------------------------------------------------------------------------------------

constexpr int64_t kGroupMaxInner = 1024;
constexpr int64_t kMinChunk = 16384;  // elements; a chunk smaller than this is not worth a block

/// Blocks that fill the GPU twice over; rows are split into chunks until there are this many.
int64_t target_blocks() { return static_cast<int64_t>(sm_count()) * (2048 / kBlock) * 2; }

/// The largest partial result (argmax of a double: value and index).
constexpr int64_t kLargestAcc = 16;

/// Every block launched at once (as for elementwise: a full grid beats a looping one on an H100).
unsigned grid(int64_t blocks) { return static_cast<unsigned>(std::clamp<int64_t>(blocks, 1, INT32_MAX)); }

template <class T, class R>
void run(const T* in, int64_t outer, int64_t inner, uint8_t out_dtype, void* out, void* scratch, const R& r) {
  if (inner <= kGroupMaxInner) {
    // About four 16-byte packs per lane (loads in flight together), at most a warp per row.
    const int64_t packs = ceil_div(inner, 16 / static_cast<int64_t>(sizeof(T)));
    int group_log2 = 0;
    while ((int64_t{4} << group_log2) < packs && group_log2 < 5) ++group_log2;
    const int64_t rows_per_block = kBlock >> group_log2;
    // Rows are small work: a few waves of blocks that loop beat a block per handful of rows.
    const int64_t waves = static_cast<int64_t>(sm_count()) * (2048 / kBlock) * 4;
    reduce_group_kernel<T, R><<<grid(std::min(ceil_div(outer, rows_per_block), waves)), kBlock>>>(
        in, outer, inner, group_log2, out, out_dtype, r);
    LAUNCH_CHECK();
    return;
  }
  // Enough blocks to fill the GPU twice over: split rows into chunks when there are too few rows.
  const int64_t target = target_blocks();
  int64_t chunks = 1;
  if (outer < target) chunks = std::max<int64_t>(1, std::min(ceil_div(target, outer), inner / kMinChunk));
  // Chunks start on a multiple of 256 elements, so they keep the row's 16-byte alignment.
  const int64_t chunk = ceil_div(ceil_div(inner, chunks), 256) * 256;
  chunks = ceil_div(inner, chunk);
  using Acc = typename R::Acc;
  if (chunks == 1) {
    reduce_block_kernel<T, R><<<grid(outer), kBlock>>>(in, outer, inner, chunk, 1, out, out_dtype, nullptr, r);
    LAUNCH_CHECK();
    return;
  }
  // outer < target and chunks <= ceil(target / outer), so outer * chunks < 2 * target partial
  // results: reduce_rows_scratch_bytes() holds them.
  static_assert(sizeof(Acc) <= kLargestAcc);
  auto* partial = static_cast<Acc*>(scratch);
  reduce_block_kernel<T, R><<<grid(outer * chunks), kBlock>>>(in, outer, inner, chunk, chunks, out, out_dtype, partial, r);
  LAUNCH_CHECK();
  combine_kernel<R><<<grid(ceil_div(outer, kWarps)), kBlock>>>(partial, outer, chunks, out, out_dtype, r);
  LAUNCH_CHECK();
}

}  // namespace

int64_t reduce_rows_scratch_bytes() { return 2 * target_blocks() * kLargestAcc; }

void reduce_rows(ReduceOp op, uint8_t in_dtype, const void* in, int64_t outer, int64_t inner, uint8_t out_dtype,
                 void* out, void* scratch) {
  if (outer <= 0) return;
  if (dtype_size(out_dtype) == 0) unsupported("reduce_rows (output)", out_dtype);
  dispatch<kArithDtypes>(in_dtype, "reduce_rows", [&](auto t) {
    using T = typename decltype(t)::type;
    using C = compute_t<T>;
    const T* x = static_cast<const T*>(in);
    switch (op) {
      case ReduceOp::Sum: return run(x, outer, inner, out_dtype, out, scratch, SumProdR<C, false>{});
      case ReduceOp::Prod: return run(x, outer, inner, out_dtype, out, scratch, SumProdR<C, true>{});
      case ReduceOp::Amax: return run(x, outer, inner, out_dtype, out, scratch, ExtremeR<C, true>{});
      case ReduceOp::Amin: return run(x, outer, inner, out_dtype, out, scratch, ExtremeR<C, false>{});
      case ReduceOp::Argmax: return run(x, outer, inner, out_dtype, out, scratch, ArgR<C, true>{});
      case ReduceOp::Argmin: return run(x, outer, inner, out_dtype, out, scratch, ArgR<C, false>{});
      case ReduceOp::Any: return run(x, outer, inner, out_dtype, out, scratch, LogicalR<C, true>{});
      case ReduceOp::All: return run(x, outer, inner, out_dtype, out, scratch, LogicalR<C, false>{});
    }
    raise_error("tally CUDA kernel reduce_rows: unknown op");
  });
}

}  // namespace tally::kernels::cuda
