// float64 and integer matmul: oneDNN has neither, so tally carries a cache-blocked kernel. Blocks of
// A and B are packed into contiguous panels and a register tile of C is updated by a loop the
// compiler turns into vector instructions (the classic GotoBLAS structure, written for clarity over
// the last 2x).

#include <omp.h>

#include <algorithm>
#include <cstring>
#include <type_traits>

#include "tally/kernels/cpu/dispatch.h"
#include "tally/kernels/cpu/matmul.h"

namespace tally::kernels::detail {
namespace {

// Integers accumulate in the unsigned type of their promoted width (32 bits, or 64 for int64):
// unsigned overflow is defined and wraps exactly as PyTorch's integer matmul does, and narrowing
// the sum gives the same low bits.
template <class T> struct accumulator { using type = T; };
template <class T> requires std::is_integral_v<T> struct accumulator<T> { using type = std::make_unsigned_t<decltype(T() + 0)>; };
template <class T> using accumulator_t = typename accumulator<T>::type;

// Register tile: MR rows × two vectors of C, 12 accumulators (for doubles: enough to hide FMA
// latency on two ports). Cache blocks: one KC×NR sliver of B (16 KiB for doubles with AVX-512)
// stays in L1 while it meets every MR-row sliver of the MC×KC panel of A, which stays in L2.
constexpr int64_t kMR = 6;
constexpr int64_t kKC = 128;
constexpr int64_t kMC = 96;
constexpr int64_t kNC = 192;
// The vector is the build target's register: wider, each would take two registers and the 12
// accumulators + 2 rows of B would no longer fit AVX2's 16 (GCC also warns that returning a vector
// wider than the target's changes the ABI).
#if defined(__AVX512F__)
constexpr int64_t kVectorBytes = 64;
#elif defined(__AVX__)
constexpr int64_t kVectorBytes = 32;
#else
constexpr int64_t kVectorBytes = 16;
#endif
template <class Acc> constexpr int64_t kLanes = kVectorBytes / static_cast<int64_t>(sizeof(Acc));
template <class Acc> constexpr int64_t kNR = 2 * kLanes<Acc>;

// GCC vector-extension type: the compiler picks the instructions (vfmadd231pd, vpmullq, ...) but,
// unlike an auto-vectorised array, keeps each accumulator in a register.
template <class Acc>
using Vec [[gnu::vector_size(kVectorBytes)]] = Acc;

// Zeroed scratch. Not std::vector<Acc>, whose code has the same name in every pass and so must
// not be emitted by a kernel pass (Note [CPU kernel dispatch]).
template <class T>
class Buffer {
 public:
  explicit Buffer(size_t n) : data_(new T[n]()) {}
  Buffer(const Buffer&) = delete;
  Buffer& operator=(const Buffer&) = delete;
  ~Buffer() { delete[] data_; }
  T* data() { return data_; }
  T& operator[](size_t i) { return data_[i]; }

 private:
  T* data_;
};

template <class Acc>
Vec<Acc> load(const Acc* p) {
  Vec<Acc> v;
  std::memcpy(&v, p, sizeof(v));
  return v;
}

template <class Acc>
void store(Acc* p, const Vec<Acc>& v) {
  std::memcpy(p, &v, sizeof(v));
}

// c[MR×NR] (row stride ldc) += a_panel[k][MR] · b_panel[k][NR] over kc steps.
template <class Acc>
void micro_kernel(int64_t kc, const Acc* __restrict a, const Acc* __restrict b, Acc* __restrict c, int64_t ldc) {
  constexpr int64_t W = kLanes<Acc>;
  Vec<Acc> acc[kMR][2];
#pragma GCC unroll 6
  for (int64_t r = 0; r < kMR; ++r) acc[r][0] = load(c + r * ldc), acc[r][1] = load(c + r * ldc + W);
  for (int64_t k = 0; k < kc; ++k) {
    const Vec<Acc> b0 = load(b + k * 2 * W), b1 = load(b + k * 2 * W + W);
#pragma GCC unroll 6
    for (int64_t r = 0; r < kMR; ++r) {
      const Acc ar = a[k * kMR + r];
      acc[r][0] += ar * b0;
      acc[r][1] += ar * b1;
    }
  }
#pragma GCC unroll 6
  for (int64_t r = 0; r < kMR; ++r) store<Acc>(c + r * ldc, acc[r][0]), store<Acc>(c + r * ldc + W, acc[r][1]);
}

// Copy rows [i0, i0+mc) × columns [k0, k0+kc) of A into MR-row slivers laid out k-major, zero-padding
// the last sliver so the micro-kernel never needs an edge case. Each source row is read in order:
// interleaving MR rows a page apart thrashes L1.
template <class T, class Acc>
void pack_a(const T* a, int64_t rs, int64_t cs, int64_t i0, int64_t mc, int64_t k0, int64_t kc, Acc* out) {
  const int64_t mc_padded = (mc + kMR - 1) / kMR * kMR;
  for (int64_t i = 0; i < mc_padded; ++i) {
    Acc* sliver = out + (i / kMR) * kMR * kc + i % kMR;
    if (i >= mc) {
      for (int64_t k = 0; k < kc; ++k) sliver[k * kMR] = Acc(0);
      continue;
    }
    const T* row = a + (i0 + i) * rs + k0 * cs;
    for (int64_t k = 0; k < kc; ++k) sliver[k * kMR] = static_cast<Acc>(row[k * cs]);
  }
}

// Copy one K×N matrix B into the layout the micro-kernel streams: for each KC block of rows, NR-column
// slivers of kc×NR elements, the last one zero-padded so the micro-kernel never needs an edge case.
// Each source row is read in order, for the same reason as in pack_a.
template <class T, class Acc>
void pack_b(const T* b, int64_t rs, int64_t cs, int64_t K, int64_t N, Acc* out) {
  constexpr int64_t NR = kNR<Acc>;
  const int64_t slivers = (N + NR - 1) / NR;
  for (int64_t k = 0; k < K; ++k) {
    const int64_t k0 = k / kKC * kKC, kc = std::min(kKC, K - k0);
    Acc* block = out + k0 * slivers * NR + (k - k0) * NR;
    const T* row = b + k * rs;
    for (int64_t s = 0; s < slivers; ++s) {
      Acc* dst = block + s * kc * NR;
      const int64_t width = std::min(NR, N - s * NR);
      for (int64_t j = 0; j < width; ++j) dst[j] = static_cast<Acc>(row[(s * NR + j) * cs]);
      for (int64_t j = width; j < NR; ++j) dst[j] = Acc(0);
    }
  }
}

template <class T>
void blocked(const MatmulProblem& p, T* C) {
  using Acc = accumulator_t<T>;
  constexpr int64_t NR = kNR<Acc>;
  static_assert(kMC % kMR == 0 && kNC % NR == 0);
  const int64_t n_padded = (p.N + NR - 1) / NR * NR;
  const int64_t b_count = p.B.batch_stride == 0 ? 1 : p.batch;
  const int64_t m_blocks = (p.M + kMC - 1) / kMC, n_blocks = (p.N + kNC - 1) / kNC;
  const int64_t tasks = p.batch * m_blocks * n_blocks;
  const auto* a_base = static_cast<const T*>(p.A.data);
  const auto* b_base = static_cast<const T*>(p.B.data);
  // B is packed once up front, not once per block of C rows: its packing is a strided gather and
  // would otherwise cost as much as the multiply for mid-sized matrices.
  Buffer<Acc> b_packed(static_cast<size_t>(b_count * p.K * n_padded));
  // Two threads only pay off once there is real work to share.
  const bool parallel = p.batch * p.M * p.N * p.K > (1 << 18);
#pragma omp parallel if (parallel)
  {
#pragma omp for schedule(static)
    for (int64_t bi = 0; bi < b_count; ++bi)
      pack_b(b_base + bi * p.B.batch_stride, p.B.row_stride, p.B.col_stride, p.K, p.N,
             b_packed.data() + bi * p.K * n_padded);

    Buffer<Acc> a_panel(kMC * kKC), c_tile(kMC * kNC);
#pragma omp for schedule(dynamic)
    for (int64_t t = 0; t < tasks; ++t) {
      const int64_t bi = t / (m_blocks * n_blocks), i0 = (t / n_blocks) % m_blocks * kMC, j0 = t % n_blocks * kNC;
      const int64_t mc = std::min(kMC, p.M - i0), nc = std::min(kNC, p.N - j0);
      const T* a = a_base + bi * p.A.batch_stride;
      const Acc* b = b_packed.data() + (b_count == 1 ? 0 : bi * p.K * n_padded);
      std::fill_n(c_tile.data(), kMC * kNC, Acc(0));
      for (int64_t k0 = 0; k0 < p.K; k0 += kKC) {
        const int64_t kc = std::min(kKC, p.K - k0);
        pack_a(a, p.A.row_stride, p.A.col_stride, i0, mc, k0, kc, a_panel.data());
        const Acc* b_block = b + k0 * n_padded + j0 * kc;
        for (int64_t jr = 0; jr < nc; jr += NR)
          for (int64_t ir = 0; ir < mc; ir += kMR)
            micro_kernel<Acc>(kc, a_panel.data() + ir * kc, b_block + jr * kc, c_tile.data() + ir * kNC + jr, kNC);
      }
      T* c = C + bi * p.M * p.N + i0 * p.N + j0;
      for (int64_t i = 0; i < mc; ++i)
        for (int64_t j = 0; j < nc; ++j) c[i * p.N + j] = static_cast<T>(c_tile[i * kNC + j]);
    }
  }
}

/// The kernel for float64 and every integer dtype of the table (oneDNN has neither), built once
/// per target (Note [CPU kernel dispatch]).
void blocked_kernel(Dtype dtype, const MatmulProblem& p, void* C) {
  dispatch(dtype, "matmul_blocked", [&]<class T>() {
    if constexpr (std::is_same_v<T, double> || (std::is_integral_v<T> && !std::is_same_v<T, bool>)) blocked(p, static_cast<T*>(C));
    else ::tally::kernels::detail::unknown_kernel_dtype(dtype);
  });
}

}  // namespace

#if TALLY_PRIMARY_PASS
void matmul_blocked(Dtype dtype, const MatmulProblem& p, void* C) {
  TALLY_INTERNAL_ASSERT(dtype == Dtype::Float64 || is_integral(dtype), "matmul_blocked got ", dtype_name(dtype));
  cpu_kernels().run<&blocked_kernel>(dtype, p, C);
}
#endif  // TALLY_PRIMARY_PASS

}  // namespace tally::kernels::detail

TALLY_CPU_KERNELS(matmul_blocked, &detail::blocked_kernel)
