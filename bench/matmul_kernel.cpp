// Throughput of the CPU matmul kernel: GFLOP/s = 2·batch·M·N·K / time (the multiply-adds only; packing,
// conversions and output rounding are inside the time but outside the count). Run with
// OMP_NUM_THREADS=2 --benchmark_repetitions=5 --benchmark_report_aggregates_only=true for medians (and
// minimum times: on a shared machine the gap between the two shows how noisy the run was).

#include <benchmark/benchmark.h>

#include <algorithm>
#include <string>
#include <vector>

#include "tally/dtype/dtype.h"
#include "tally/kernels/cpu/matmul.h"

namespace {

using tally::Dtype;
using tally::kernels::MatrixRef;

template <class T>
void bm_matmul(benchmark::State& state, int64_t batch, int64_t M, int64_t N, int64_t K, bool broadcast_b) {
  std::vector<T> a(static_cast<size_t>(batch * M * K), T(0.5f));
  std::vector<T> b(static_cast<size_t>((broadcast_b ? 1 : batch) * K * N), T(0.25f));
  std::vector<T> c(static_cast<size_t>(batch * M * N));
  const MatrixRef ar{a.data(), M * K, K, 1}, br{b.data(), broadcast_b ? 0 : K * N, N, 1};
  const Dtype dtype = tally::dtype_of<T>();
  tally::kernels::matmul(dtype, batch, M, N, K, ar, br, c.data());  // creates the primitive, outside the timing
  for (auto _ : state) {
    tally::kernels::matmul(dtype, batch, M, N, K, ar, br, c.data());
    benchmark::DoNotOptimize(c.data());
  }
  state.counters["GFLOP/s"] = benchmark::Counter(2.0 * batch * M * N * K * 1e-9, benchmark::Counter::kIsIterationInvariantRate);
}

double min_of(const std::vector<double>& v) { return *std::min_element(v.begin(), v.end()); }

template <class T>
void register_dtype(const char* name) {
  for (int64_t n : {256, 512, 1024, 2048}) {
    benchmark::RegisterBenchmark((std::string(name) + "/" + std::to_string(n) + "^3").c_str(),
                                 [n](benchmark::State& s) { bm_matmul<T>(s, 1, n, n, n, false); })
        ->Unit(benchmark::kMillisecond)->UseRealTime()->MinTime(0.3)->ComputeStatistics("min", min_of);
  }
  benchmark::RegisterBenchmark((std::string(name) + "/1024x256@256x64").c_str(),
                               [](benchmark::State& s) { bm_matmul<T>(s, 1, 1024, 64, 256, false); })
      ->Unit(benchmark::kMillisecond)->UseRealTime()->MinTime(0.3)->ComputeStatistics("min", min_of);
  benchmark::RegisterBenchmark((std::string(name) + "/(4,8,16,32)@(32,2)").c_str(),
                               [](benchmark::State& s) { bm_matmul<T>(s, 32, 16, 2, 32, true); })
      ->Unit(benchmark::kMicrosecond)->UseRealTime()->MinTime(0.1)->ComputeStatistics("min", min_of);
}

}  // namespace

int main(int argc, char** argv) {
  register_dtype<float>("float32");
  register_dtype<tally::BFloat16>("bfloat16");
  register_dtype<tally::Half>("float16");
  register_dtype<double>("float64");
  benchmark::Initialize(&argc, argv);
  benchmark::RunSpecifiedBenchmarks();
  benchmark::Shutdown();
}
