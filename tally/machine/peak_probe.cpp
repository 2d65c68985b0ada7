#include "tally/machine/peak_probe.h"

#include <immintrin.h>
#include <omp.h>
#if defined(__linux__) && defined(__x86_64__)
#include <sys/syscall.h>
#include <unistd.h>
#endif

#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <memory>
#include <vector>

#include "tally/machine/cpu_info.h"
#include "tally/error/error.h"

namespace tally::machine {

namespace {

using Clock = std::chrono::steady_clock;

double seconds_since(Clock::time_point t0) { return std::chrono::duration<double>(Clock::now() - t0).count(); }

// Enough independent chains to hide FMA latency (4 cycles) on two ports: 8 would do, 24 leaves
// slack and still fits the 32 zmm registers with the two operands.
constexpr int kChains = 24;
constexpr int64_t kItersPerBlock = 1 << 13;

// Each block runs kItersPerBlock FMAs on every chain and returns the FLOPs done. The multiplier
// is just below 1 so every chain converges to b / (1 - a) and never reaches inf or a denormal.
// Target attributes compile the kernels regardless of -march; cpu_info() picks one at run time.
__attribute__((target("avx512f"))) double fma_block_avx512(float* sink) {
  __m512 acc[kChains];
  for (int c = 0; c < kChains; ++c) acc[c] = _mm512_set1_ps(static_cast<float>(c));
  const __m512 a = _mm512_set1_ps(0.9999f), b = _mm512_set1_ps(1e-4f);
  for (int64_t i = 0; i < kItersPerBlock; ++i) {
#pragma GCC unroll 24
    for (int c = 0; c < kChains; ++c) acc[c] = _mm512_fmadd_ps(acc[c], a, b);
  }
  __m512 total = acc[0];
  for (int c = 1; c < kChains; ++c) total = _mm512_add_ps(total, acc[c]);
  // Stored and summed by hand: GCC 12's _mm512_reduce_add_ps trips its own -Wuninitialized.
  float lanes[16];
  _mm512_storeu_ps(lanes, total);
  for (float v : lanes) *sink += v;
  return static_cast<double>(kItersPerBlock) * kChains * 16 * 2;
}

__attribute__((target("avx2,fma"))) double fma_block_avx2(float* sink) {
  __m256 acc[kChains / 2];  // 16 ymm registers only: keep the chains within them
  for (int c = 0; c < kChains / 2; ++c) acc[c] = _mm256_set1_ps(static_cast<float>(c));
  const __m256 a = _mm256_set1_ps(0.9999f), b = _mm256_set1_ps(1e-4f);
  for (int64_t i = 0; i < kItersPerBlock; ++i) {
#pragma GCC unroll 12
    for (int c = 0; c < kChains / 2; ++c) acc[c] = _mm256_fmadd_ps(acc[c], a, b);
  }
  float lanes[8];
  __m256 total = acc[0];
  for (int c = 1; c < kChains / 2; ++c) total = _mm256_add_ps(total, acc[c]);
  _mm256_storeu_ps(lanes, total);
  for (float v : lanes) *sink += v;
  return static_cast<double>(kItersPerBlock) * (kChains / 2) * 8 * 2;
}

// vdpbf16ps: each of 16 float lanes adds the dot product of a pair of bf16 values, 4 FLOP a lane.
// The accumulators grow by 1e-3 an instruction, so they stay small and exact enough to be finite.
__attribute__((target("avx512f,avx512bf16"))) double bf16_dot_block_avx512(float* sink) {
  __m512 acc[kChains];
  for (int c = 0; c < kChains; ++c) acc[c] = _mm512_set1_ps(static_cast<float>(c));
  const __m512bh a = _mm512_cvtne2ps_pbh(_mm512_set1_ps(1e-3f), _mm512_set1_ps(1e-3f));
  const __m512bh b = _mm512_cvtne2ps_pbh(_mm512_set1_ps(0.5f), _mm512_set1_ps(0.5f));
  for (int64_t i = 0; i < kItersPerBlock; ++i) {
#pragma GCC unroll 24
    for (int c = 0; c < kChains; ++c) acc[c] = _mm512_dpbf16_ps(acc[c], a, b);
  }
  __m512 total = acc[0];
  for (int c = 1; c < kChains; ++c) total = _mm512_add_ps(total, acc[c]);
  float lanes[16];
  _mm512_storeu_ps(lanes, total);
  for (float v : lanes) *sink += v;
  return static_cast<double>(kItersPerBlock) * kChains * 16 * 4;
}

// Note [AMX tile permission]: Linux leaves AMX tile data (xstate component 18, XTILEDATA) switched
// off for every process, so the first tile instruction of a process that has not asked for it dies
// of SIGILL even on a CPU with AMX. ARCH_REQ_XCOMP_PERM asks once for the whole process, its present
// and future threads included (oneDNN asks for itself the same way). Asked for only after cpu_info()
// has seen AMX in cpuid with the tile state enabled in XCR0.
bool amx_permission_granted() {
#if defined(__linux__) && defined(__x86_64__)
  static const bool granted = [] {
    constexpr long kArchGetXcompPerm = 0x1022, kArchReqXcompPerm = 0x1023, kXfeatureXtiledata = 18;
    if (syscall(SYS_arch_prctl, kArchReqXcompPerm, kXfeatureXtiledata) != 0) return false;
    unsigned long features = 0;
    return syscall(SYS_arch_prctl, kArchGetXcompPerm, &features) == 0 && ((features >> kXfeatureXtiledata) & 1) != 0;
  }();
  return granted;
#else
  return false;
#endif
}

#if defined(__x86_64__)
// The 64-byte operand of ldtilecfg: palette 1 gives eight tiles tmm0-7 of up to 16 rows x 64 bytes.
struct alignas(64) TileConfig {
  uint8_t palette_id = 1;
  uint8_t start_row = 0;
  uint8_t reserved[14] = {};
  uint16_t colsb[16] = {};  // bytes per row of each tile
  uint8_t rows[16] = {};
};
static_assert(sizeof(TileConfig) == 64);

// tdpbf16ps C, A, B: C (16 x 16 float32) += A (16 x 32 bf16) . B (32 x 16 bf16, stored as 16 rows
// of 16 bf16 pairs): 16 x 16 x 32 multiply-adds = 16384 FLOP an instruction, one instruction per 16
// cycles per core on Sapphire Rapids (Note [Promised CPU peak]). Six accumulators tmm0-5 share the
// sources tmm6 (A) and tmm7 (B), so an accumulator's next product waits for five others, ~96 cycles,
// more than the instruction's latency. Written as inline asm (the assembler knows AMX whatever -march
// says), so only this function uses tile instructions and the build needs no -mamx flags; callers
// reach it only when cpu_info() saw AMX and amx_permission_granted().
constexpr int64_t kAmxItersPerBlock = 2048;  // x 24 instructions x 16 cycles: ~0.25 ms at 3 GHz
constexpr int kAmxAccumulators = 6, kAmxUnroll = 4;

double amx_bf16_block(float* sink) {
  TileConfig config;
  for (int t = 0; t < 8; ++t) {
    config.rows[t] = 16;
    config.colsb[t] = 64;
  }
  // 1/64 in bfloat16 (exponent 127 - 6, mantissa 0): each instruction adds 32 / 4096 to every
  // accumulator element, so after a block they hold 64, exact and finite.
  alignas(64) uint16_t a[16 * 32], b[16 * 32];
  std::fill(a, a + 16 * 32, uint16_t{0x3C80});
  std::fill(b, b + 16 * 32, uint16_t{0x3C80});
  alignas(64) float c[kAmxAccumulators][16 * 16];
  int64_t n = kAmxItersPerBlock;
  const long stride = 64;
  __asm__ volatile("ldtilecfg %0" : : "m"(config) : "memory");
  __asm__ volatile(
      "tileloadd (%[a],%[stride],1), %%tmm6\n\t"
      "tileloadd (%[b],%[stride],1), %%tmm7\n\t"
      "tilezero %%tmm0\n\t"
      "tilezero %%tmm1\n\t"
      "tilezero %%tmm2\n\t"
      "tilezero %%tmm3\n\t"
      "tilezero %%tmm4\n\t"
      "tilezero %%tmm5\n\t"
      "1:\n\t"
      ".rept 4\n\t"  // kAmxUnroll
      "tdpbf16ps %%tmm7, %%tmm6, %%tmm0\n\t"  // AT&T order: B, A, C
      "tdpbf16ps %%tmm7, %%tmm6, %%tmm1\n\t"
      "tdpbf16ps %%tmm7, %%tmm6, %%tmm2\n\t"
      "tdpbf16ps %%tmm7, %%tmm6, %%tmm3\n\t"
      "tdpbf16ps %%tmm7, %%tmm6, %%tmm4\n\t"
      "tdpbf16ps %%tmm7, %%tmm6, %%tmm5\n\t"
      ".endr\n\t"
      "dec %[n]\n\t"
      "jnz 1b\n\t"
      "tilestored %%tmm0, 0(%[c],%[stride],1)\n\t"
      "tilestored %%tmm1, 1024(%[c],%[stride],1)\n\t"
      "tilestored %%tmm2, 2048(%[c],%[stride],1)\n\t"
      "tilestored %%tmm3, 3072(%[c],%[stride],1)\n\t"
      "tilestored %%tmm4, 4096(%[c],%[stride],1)\n\t"
      "tilestored %%tmm5, 5120(%[c],%[stride],1)\n\t"
      "tilerelease\n\t"  // leaves no tile state for the OS to save on a context switch
      : [n] "+r"(n)
      : [a] "r"(a), [b] "r"(b), [c] "r"(&c[0][0]), [stride] "r"(stride)
      : "cc", "memory");
  for (const auto& tile : c)
    for (float v : tile) *sink += v;
  return static_cast<double>(kAmxItersPerBlock) * kAmxUnroll * kAmxAccumulators * 16 * 16 * 32 * 2;
}
#endif  // __x86_64__

using Block = double (*)(float* sink);

// Note [Peak on a shared machine]: all threads run the same fixed work in lock-stepped windows of
// ~1 ms; a window's rate is the total work over the slowest thread's time, and the result is the
// best window seen in `seconds`. Another process taking a core only ever makes a window slower,
// so the best window is the machine's ceiling with every thread busy at once, not an average
// diluted by whoever else shares the machine.
double run_windows(Block block, int threads, double seconds) {
  constexpr int kBlocksPerWindow = 8;
  std::vector<double> window_seconds(static_cast<size_t>(threads), 0.0);
  double best = 0.0;
  bool stop = false;
  float sink = 0.0f;
  const auto start = Clock::now();
#pragma omp parallel num_threads(threads) reduction(+ : sink)
  {
    const int tid = omp_get_thread_num(), team = omp_get_num_threads();
    while (true) {
#pragma omp barrier
      const auto t0 = Clock::now();
      double flops = 0.0;
      for (int b = 0; b < kBlocksPerWindow; ++b) flops += block(&sink);
      window_seconds[static_cast<size_t>(tid)] = seconds_since(t0);
#pragma omp barrier
#pragma omp single
      {
        const double slowest = *std::max_element(window_seconds.begin(), window_seconds.begin() + team);
        best = std::max(best, team * flops / slowest);
        stop = seconds_since(start) >= seconds;
      }  // the single's implicit barrier publishes `stop` to every thread
      if (stop) break;
    }
  }
  // The sink depends on every chain, so the compiler cannot drop the work; it is never NaN.
  TALLY_INTERNAL_ASSERT(sink == sink, "peak probe chains diverged");
  return best;
}

double run_peak(Block block, int threads, double seconds) {
  // Warm-up: spawns the OpenMP threads and lets the cores settle into their AVX frequency.
  run_windows(block, threads, std::min(0.05, seconds / 4));
  return run_windows(block, threads, seconds);
}

struct FreeDeleter {
  void operator()(double* p) const { std::free(p); }
};
using Buffer = std::unique_ptr<double[], FreeDeleter>;

Buffer allocate(int64_t n) {
  const auto bytes = static_cast<size_t>((n * 8 + 63) / 64 * 64);  // aligned_alloc wants a multiple
  auto* p = static_cast<double*>(std::aligned_alloc(64, bytes));
  if (p == nullptr) throw Error(detail::str_cat("measure_stream: cannot allocate ", bytes, " bytes"));
  return Buffer(p);
}

template <class Kernel>
double best_rate(int reps, double bytes, Kernel&& kernel) {
  double best = 0.0;
  for (int r = 0; r < reps; ++r) {
    const auto t0 = Clock::now();
    kernel();
    best = std::max(best, bytes / seconds_since(t0));
  }
  return best;
}

// The STREAM kernels take their arrays as plain pointer arguments: captured by reference in a
// lambda, GCC re-loads the pointer in every simd lane and emits gathers (10x slower).
double stream_read(const double* __restrict a, int64_t n, int threads) {
  double s = 0.0;
#pragma omp parallel for simd schedule(static) num_threads(threads) reduction(+ : s)
  for (int64_t i = 0; i < n; ++i) s += a[i];
  return s;
}

void stream_copy(double* __restrict c, const double* __restrict a, int64_t n, int threads) {
#pragma omp parallel for simd schedule(static) num_threads(threads)
  for (int64_t i = 0; i < n; ++i) c[i] = a[i];
}

void stream_scale(double* __restrict b, const double* __restrict c, double s, int64_t n, int threads) {
#pragma omp parallel for simd schedule(static) num_threads(threads)
  for (int64_t i = 0; i < n; ++i) b[i] = s * c[i];
}

void stream_add(double* __restrict c, const double* __restrict a, const double* __restrict b, int64_t n,
                int threads) {
#pragma omp parallel for simd schedule(static) num_threads(threads)
  for (int64_t i = 0; i < n; ++i) c[i] = a[i] + b[i];
}

void stream_triad(double* __restrict a, const double* __restrict b, const double* __restrict c, double s, int64_t n,
                  int threads) {
#pragma omp parallel for simd schedule(static) num_threads(threads)
  for (int64_t i = 0; i < n; ++i) a[i] = b[i] + s * c[i];
}

}  // namespace

double measure_fma_peak_flops(int threads, double seconds) {
  TALLY_CHECK(threads >= 1 && seconds > 0, "measure_fma_peak_flops: expected threads >= 1 and seconds > 0, got ",
              threads, " and ", seconds);
  const bool avx512 = cpu_info().avx512f, avx2 = cpu_info().avx2 && cpu_info().fma;
  TALLY_CHECK_TYPE(NotImplementedError, avx512 || avx2, "measure_fma_peak_flops needs AVX2+FMA or AVX-512");
  return run_peak(avx512 ? fma_block_avx512 : fma_block_avx2, threads, seconds);
}

double measure_bf16_dot_peak_flops(int threads, double seconds) {
  TALLY_CHECK(threads >= 1 && seconds > 0, "measure_bf16_dot_peak_flops: expected threads >= 1 and seconds > 0, got ",
              threads, " and ", seconds);
  TALLY_CHECK_TYPE(NotImplementedError, cpu_info().avx512_bf16,
                   "measure_bf16_dot_peak_flops needs AVX512_BF16 (vdpbf16ps), which this CPU does not have");
  return run_peak(bf16_dot_block_avx512, threads, seconds);
}

double measure_amx_bf16_peak_flops(int threads, double seconds) {
  TALLY_CHECK(threads >= 1 && seconds > 0, "measure_amx_bf16_peak_flops: expected threads >= 1 and seconds > 0, got ",
              threads, " and ", seconds);
  TALLY_CHECK_TYPE(NotImplementedError, cpu_info().amx_bf16,
                   "measure_amx_bf16_peak_flops needs AMX-BF16 (tdpbf16ps), which this CPU does not have");
#if defined(__x86_64__)
  TALLY_CHECK_TYPE(NotImplementedError, amx_permission_granted(),
                   "measure_amx_bf16_peak_flops: the kernel refused this process AMX tile state "
                   "(arch_prctl ARCH_REQ_XCOMP_PERM, XTILEDATA); Linux 5.16 or later grants it");
  return run_peak(amx_bf16_block, threads, seconds);
#else
  TALLY_CHECK_TYPE(NotImplementedError, false, "measure_amx_bf16_peak_flops needs x86-64");
  return 0.0;
#endif
}

StreamResult measure_stream(int64_t bytes_per_array, int threads, int reps) {
  TALLY_CHECK(bytes_per_array >= 8 && threads >= 1 && reps >= 1,
              "measure_stream: expected bytes_per_array >= 8, threads >= 1, reps >= 1, got ", bytes_per_array, ", ",
              threads, ", ", reps);
  const int64_t n = bytes_per_array / 8;
  Buffer a_buf = allocate(n), b_buf = allocate(n), c_buf = allocate(n);
  double* __restrict a = a_buf.get();
  double* __restrict b = b_buf.get();
  double* __restrict c = c_buf.get();
  // First touch with the same static schedule as the kernels, so each thread's pages are mapped
  // (and, on a multi-socket machine, placed) where that thread later streams them.
#pragma omp parallel for schedule(static) num_threads(threads)
  for (int64_t i = 0; i < n; ++i) {
    a[i] = 1.0;
    b[i] = 2.0;
    c[i] = 0.0;
  }
  const double scalar = 3.0, array_bytes = static_cast<double>(n) * 8;
  double sum = 0.0;
  StreamResult r{};
  r.read_bytes_per_sec = best_rate(reps, array_bytes, [&] { sum += stream_read(a, n, threads); });
  r.copy_bytes_per_sec = best_rate(reps, 2 * array_bytes, [&] { stream_copy(c, a, n, threads); });
  r.scale_bytes_per_sec = best_rate(reps, 2 * array_bytes, [&] { stream_scale(b, c, scalar, n, threads); });
  r.add_bytes_per_sec = best_rate(reps, 3 * array_bytes, [&] { stream_add(c, a, b, n, threads); });
  r.triad_bytes_per_sec = best_rate(reps, 3 * array_bytes, [&] { stream_triad(a, b, c, scalar, n, threads); });
  // Every kernel wrote what it should have: a = 1, c = a = 1, b = 3, c = 1 + 3 = 4, a = 3 + 3*4.
  TALLY_INTERNAL_ASSERT(sum == static_cast<double>(n) * reps && a[n - 1] == 15.0 && b[0] == 3.0 && c[n / 2] == 4.0,
                        "STREAM kernels produced wrong values");
  return r;
}

double measure_stream_triad_bytes_per_sec(int64_t bytes_per_array, int threads) {
  return measure_stream(bytes_per_array, threads).triad_bytes_per_sec;
}

}  // namespace tally::machine
