// An independent check of `tally bench peak`'s float32 FMA figure (and, where the CPU has
// AVX512_BF16, its vdpbf16ps figure), compared in the same invocation with the library's probes
// (target: within 10%). A different loop: 12 chains of _mm512_fmadd_ps
// (_mm256_fmadd_ps without AVX-512) on std::threads pinned one a core, released together by a
// spinning start flag; each thread times its own fixed run of ~6 ms and the rate is the total work
// over the slowest thread. The best of many runs is kept, as the probe keeps its best window, so
// another process on the machine only lowers runs it overlaps.

#include <immintrin.h>
#include <pthread.h>
#include <sched.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <thread>
#include <vector>

#include "tally/machine/cpu_info.h"
#include "tally/machine/peak_probe.h"

namespace {

constexpr int kChains = 12;
constexpr long kIters = 1'000'000;  // ~6 ms at 2.4 GHz

// The chains at the CPU's widest FMA: 16 lanes with AVX-512, else 8 with AVX2 + FMA, as the
// probe picks. Target attributes compile both whatever -march is (a build for an AVX2-only
// machine must still build this program); main picks one from cpu_info() at run time.
__attribute__((target("avx512f"))) float chain_work_avx512() {
  __m512 acc[kChains];
  for (int c = 0; c < kChains; ++c) acc[c] = _mm512_set1_ps(1.0f + 0.001f * c);
  const __m512 m = _mm512_set1_ps(0.999999f), a = _mm512_set1_ps(1e-7f);
  for (long i = 0; i < kIters; ++i)
    for (int c = 0; c < kChains; ++c) acc[c] = _mm512_fmadd_ps(acc[c], m, a);
  alignas(64) float lanes[16];
  __m512 s = acc[0];
  for (int c = 1; c < kChains; ++c) s = _mm512_add_ps(s, acc[c]);
  _mm512_store_ps(lanes, s);
  return lanes[0] + lanes[15];
}

// 12 chains + 2 constants fit the 16 ymm registers.
__attribute__((target("avx2,fma"))) float chain_work_avx2() {
  __m256 acc[kChains];
  for (int c = 0; c < kChains; ++c) acc[c] = _mm256_set1_ps(1.0f + 0.001f * c);
  const __m256 m = _mm256_set1_ps(0.999999f), a = _mm256_set1_ps(1e-7f);
  for (long i = 0; i < kIters; ++i)
    for (int c = 0; c < kChains; ++c) acc[c] = _mm256_fmadd_ps(acc[c], m, a);
  alignas(32) float lanes[8];
  __m256 s = acc[0];
  for (int c = 1; c < kChains; ++c) s = _mm256_add_ps(s, acc[c]);
  _mm256_store_ps(lanes, s);
  return lanes[0] + lanes[7];
}

// 12 chains of vdpbf16ps: each adds a 2-element bf16 dot product in every float lane (4 FLOP).
__attribute__((target("avx512f,avx512bf16"))) float chain_work_bf16() {
  __m512 acc[kChains];
  for (int c = 0; c < kChains; ++c) acc[c] = _mm512_set1_ps(0.5f * c);
  const __m512bh x = _mm512_cvtne2ps_pbh(_mm512_set1_ps(0.25f), _mm512_set1_ps(0.125f));
  const __m512bh y = _mm512_cvtne2ps_pbh(_mm512_set1_ps(1e-4f), _mm512_set1_ps(1e-4f));
  for (long i = 0; i < kIters; ++i)
    for (int c = 0; c < kChains; ++c) acc[c] = _mm512_dpbf16_ps(acc[c], x, y);
  alignas(64) float lanes[16];
  __m512 s = acc[0];
  for (int c = 1; c < kChains; ++c) s = _mm512_add_ps(s, acc[c]);
  _mm512_store_ps(lanes, s);
  return lanes[0] + lanes[15];
}

bool use_avx512() { return tally::machine::cpu_info().avx512f; }
float fp32_work() { return use_avx512() ? chain_work_avx512() : chain_work_avx2(); }
double fp32_flops_per_call() { return 2.0 * (use_avx512() ? 16 : 8) * kChains * static_cast<double>(kIters); }
double bf16_flops_per_call() { return 4.0 * 16 * kChains * static_cast<double>(kIters); }

double run_threads(int threads, float (*work)(), double flops_per_call) {
  std::vector<std::thread> pool;
  std::vector<float> sink(static_cast<size_t>(threads));
  std::vector<double> seconds(static_cast<size_t>(threads));
  std::atomic<int> ready{0};
  std::atomic<bool> go{false};
  for (int t = 0; t < threads; ++t)
    pool.emplace_back([&, t] {
      cpu_set_t set;
      CPU_ZERO(&set);
      CPU_SET(t, &set);
      pthread_setaffinity_np(pthread_self(), sizeof(set), &set);
      ready.fetch_add(1);
      while (!go.load(std::memory_order_acquire)) {
      }
      const auto t0 = std::chrono::steady_clock::now();
      sink[static_cast<size_t>(t)] = work();
      seconds[static_cast<size_t>(t)] = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    });
  while (ready.load() < threads) {
  }
  go.store(true, std::memory_order_release);
  for (auto& th : pool) th.join();
  if (sink[0] == 12345.f) std::puts("");  // keep the work observable
  const double slowest = *std::max_element(seconds.begin(), seconds.end());
  return flops_per_call * threads / slowest;
}

}  // namespace

int main() {
  const auto& cpu = tally::machine::cpu_info();
  if (!cpu.avx512f && !(cpu.avx2 && cpu.fma)) {
    std::puts("fma_check: this CPU has neither AVX-512 nor AVX2 + FMA; nothing to compare");
    return 0;
  }
  const int cores = cpu.usable_cores;
  double independent = 0, probe = 0;
  for (int r = 0; r < 10; ++r) {  // interleaved, best of each
    for (int k = 0; k < 50; ++k) independent = std::max(independent, run_threads(cores, fp32_work, fp32_flops_per_call()));
    probe = std::max(probe, tally::machine::measure_fma_peak_flops(cores, 0.5));
  }
  double independent1 = 0, probe1 = 0;  // one core: meaningful even when the other core is busy
  for (int r = 0; r < 3; ++r) {
    for (int k = 0; k < 50; ++k) independent1 = std::max(independent1, run_threads(1, fp32_work, fp32_flops_per_call()));
    probe1 = std::max(probe1, tally::machine::measure_fma_peak_flops(1, 0.5));
  }
  std::printf("1 core:  independent %.1f GFLOP/s; tally's probe %.1f GFLOP/s; probe/independent = %.3f (target 0.90-1.10)\n",
              independent1 / 1e9, probe1 / 1e9, probe1 / independent1);
  std::printf("%d cores: independent FMA loop: %.1f GFLOP/s; tally's probe (tally bench peak): %.1f GFLOP/s; probe/independent = %.3f (target 0.90-1.10)\n",
              cores, independent / 1e9, probe / 1e9, probe / independent);
  if (cpu.avx512_bf16) {
    double independent_bf16 = 0, probe_bf16 = 0;
    for (int r = 0; r < 5; ++r) {
      for (int k = 0; k < 50; ++k)
        independent_bf16 = std::max(independent_bf16, run_threads(cores, chain_work_bf16, bf16_flops_per_call()));
      probe_bf16 = std::max(probe_bf16, tally::machine::measure_bf16_dot_peak_flops(cores, 0.5));
    }
    std::printf("%d cores: independent vdpbf16ps loop: %.1f GFLOP/s; tally's bf16 probe: %.1f GFLOP/s; probe/independent = %.3f (target 0.90-1.10)\n",
                cores, independent_bf16 / 1e9, probe_bf16 / 1e9, probe_bf16 / independent_bf16);
  } else {
    std::puts("bf16: this CPU has no AVX512_BF16; tally bench peak measures no bf16 figure to check");
  }
  return 0;
}
