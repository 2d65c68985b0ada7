// The tally half of bench/compare.py: times the foundation issue's targets the way a user writes them
// (`Tensor z = x + y;` in a loop, allocation included) and prints one JSON object per measurement, so
// that compare.py can run it between its own PyTorch measurements and compute ratios on one machine
// state. The ceilings (FMA peak, STREAM) are measured here too, by the library's own probes.
//
// Usage: tally_ops GROUP [--iters N]
//   GROUP is one of: info, peak, matmul_f32, matmul_bf16, memory, tiny_matmul, dispatch.
// Output lines: {"name": ..., "seconds": [per-iteration times], "flops": F, "bytes": B}
//   (peak lines carry "value" in FLOP/s or bytes/s instead of times.)

#include <algorithm>
#include <array>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <utility>
#include <vector>

#include "tally/machine/cpu_info.h"
#include "tally/machine/peak_probe.h"
#include "tally/tally.h"

namespace {

using Clock = std::chrono::steady_clock;

// Prints the per-iteration times of fn (after one untimed warm-up call) with the work it does.
template <class Fn>
void time_op(const std::string& name, int iters, double flops, double bytes, Fn&& fn) {
  fn();  // warm-up: creates oneDNN primitives and fills the caching allocator
  std::string times;
  for (int i = 0; i < iters; ++i) {
    const auto t0 = Clock::now();
    fn();
    const double s = std::chrono::duration<double>(Clock::now() - t0).count();
    if (i) times += ",";
    times += std::to_string(s);
  }
  std::printf("{\"name\": \"%s\", \"seconds\": [%s], \"flops\": %.0f, \"bytes\": %.0f}\n", name.c_str(),
              times.c_str(), flops, bytes);
  std::fflush(stdout);
}

void print_value(const std::string& name, double value) {
  std::printf("{\"name\": \"%s\", \"value\": %.6e}\n", name.c_str(), value);
  std::fflush(stdout);
}

// The machine, as cpu_info() sees it, for the report's header.
void run_info() {
  const tally::machine::CpuInfo& c = tally::machine::cpu_info();
  std::string features;
  const std::pair<const char*, bool> flags[] = {{"avx2", c.avx2},           {"fma", c.fma},
                                                {"avx512f", c.avx512f},     {"avx512_bf16", c.avx512_bf16},
                                                {"avx512_fp16", c.avx512_fp16}, {"amx_tile", c.amx_tile},
                                                {"amx_bf16", c.amx_bf16},   {"amx_int8", c.amx_int8}};
  for (const auto& [name, present] : flags) {
    if (!features.empty()) features += " ";
    features += name;
    features += present ? "+" : "-";
  }
  std::printf("{\"name\": \"info\", \"model\": \"%s\", \"usable_cores\": %d, \"clock_ghz\": %.2f, \"features\": \"%s\"}\n",
              c.model_name.c_str(), c.usable_cores, c.clock_ghz, features.c_str());
}

void run_peak() {
  namespace machine = tally::machine;
  const int threads = machine::cpu_info().usable_cores;
  print_value("peak_fma_f32", machine::measure_fma_peak_flops(threads, 0.5));
  // 256 MiB per array, like the tensors of the memory group: DRAM, not the last-level cache.
  const machine::StreamResult s = machine::measure_stream(int64_t{256} << 20, threads, 5);
  print_value("stream_read", s.read_bytes_per_sec);
  print_value("stream_copy", s.copy_bytes_per_sec);
  print_value("stream_scale", s.scale_bytes_per_sec);
  print_value("stream_add", s.add_bytes_per_sec);
  print_value("stream_triad", s.triad_bytes_per_sec);
}

// Square sizes plus the lecture's (1024×256)·(256×64).
void run_matmul(tally::Dtype dtype, const char* tag, const std::vector<int64_t>& sizes, int iters) {
  struct Shape { int64_t m, k, n; };
  std::vector<Shape> shapes;
  for (int64_t s : sizes) shapes.push_back({s, s, s});
  if (dtype == tally::kFloat32) shapes.push_back({1024, 256, 64});
  for (const Shape& sh : shapes) {
    const tally::Tensor a = tally::randn({sh.m, sh.k}).to(dtype), b = tally::randn({sh.k, sh.n}).to(dtype);
    const double flops = 2.0 * sh.m * sh.n * sh.k;
    const double bytes = static_cast<double>((sh.m * sh.k + sh.k * sh.n + sh.m * sh.n) * a.element_size());
    // Fewer iterations where one call already takes ~0.5 s.
    const int n = flops > 1e11 ? std::max(2, iters / 2) : iters;
    const std::string name = std::string("matmul_") + tag + "_" + std::to_string(sh.m) + "x" + std::to_string(sh.k) +
                             "x" + std::to_string(sh.n);
    time_op(name, n, flops, bytes, [&] { tally::Tensor c = tally::matmul(a, b); });
  }
}

// 256 MiB float32 operands (64M elements); softmax over rows of 4096.
void run_memory(int iters) {
  constexpr int64_t kRows = 16384, kCols = 4096;
  const tally::Tensor x = tally::randn({kRows, kCols}), y = tally::randn({kRows, kCols});
  const double tensor_bytes = static_cast<double>(x.nbytes()), n = static_cast<double>(x.numel());
  time_op("add", iters, n, 3 * tensor_bytes, [&] { tally::Tensor z = x + y; });
  time_op("mul_scalar", iters, n, 2 * tensor_bytes, [&] { tally::Tensor z = x * 2; });
  time_op("sum", iters, n, tensor_bytes + 4, [&] { tally::Tensor z = x.sum(); });
  // FLOPs as an estimate only (max, sub, exp, add, div per element); bytes are one read and one write.
  time_op("softmax", iters, 5 * n, 2 * tensor_bytes, [&] { tally::Tensor z = tally::softmax(x, -1); });
  time_op("randn", iters, 0, tensor_bytes, [&] { tally::Tensor z = tally::randn({kRows, kCols}); });
  // A transpose made dense: one read and one write, along different dimensions (Note [Loops in tiles]).
  time_op("t_contiguous", iters, 0, 2 * tensor_bytes, [&] { tally::Tensor z = x.t().contiguous(); });
}

// The kernels a portable build compiles per target (Note [CPU kernel dispatch]), one op each on
// 256 MiB float32 operands (64M elements; softmax over rows of 4096): elementwise with and without
// Vec16f, the reductions, softmax, the casts, and the matmuls tally computes itself (float16
// widened, float64 blocked, tiny float32). bench/compare_dispatch.py runs it per build and set.
void run_dispatch(int iters) {
  constexpr int64_t kRows = 16384, kCols = 4096;
  const tally::Tensor x = tally::randn({kRows, kCols}), y = tally::randn({kRows, kCols});
  const tally::Tensor xb = x.to(tally::kBFloat16), xh = x.to(tally::kFloat16);
  const double bytes = static_cast<double>(x.nbytes()), n = static_cast<double>(x.numel());
  time_op("add", iters, n, 3 * bytes, [&] { tally::Tensor z = x + y; });
  time_op("mul_scalar", iters, n, 2 * bytes, [&] { tally::Tensor z = x * 2; });
  time_op("exp", iters, n, 2 * bytes, [&] { tally::Tensor z = x.exp(); });
  time_op("silu", iters, 5 * n, 2 * bytes, [&] { tally::Tensor z = tally::silu(x); });
  time_op("tanh", iters, n, 2 * bytes, [&] { tally::Tensor z = x.tanh(); });
  time_op("sum", iters, n, bytes, [&] { tally::Tensor z = x.sum(); });
  time_op("amax_rows", iters, n, bytes, [&] { tally::Tensor z = tally::amax(x, {1}); });
  time_op("sum_dim0", iters, n, bytes, [&] { tally::Tensor z = tally::sum(x, {0}); });
  time_op("softmax", iters, 5 * n, 2 * bytes, [&] { tally::Tensor z = tally::softmax(x, -1); });
  time_op("cast_f32_bf16", iters, 0, 1.5 * bytes, [&] { tally::Tensor z = x.to(tally::kBFloat16); });
  time_op("cast_bf16_f32", iters, 0, 1.5 * bytes, [&] { tally::Tensor z = xb.to(tally::kFloat32); });
  time_op("cast_f16_f32", iters, 0, 1.5 * bytes, [&] { tally::Tensor z = xh.to(tally::kFloat32); });
  const tally::Tensor ah = tally::randn({1024, 1024}).to(tally::kFloat16), ad = tally::randn({512, 512}).to(tally::kFloat64);
  time_op("matmul_f16_1024", iters, 2.0 * 1024 * 1024 * 1024, 0, [&] { tally::Tensor c = tally::matmul(ah, ah); });
  time_op("matmul_f64_512", iters, 2.0 * 512 * 512 * 512, 0, [&] { tally::Tensor c = tally::matmul(ad, ad); });
  const tally::Tensor at = tally::randn({16, 16});
  time_op("tiny_matmul_16", iters, 1000 * 2.0 * 16 * 16 * 16, 0, [&] {
    for (int i = 0; i < 1000; ++i) tally::Tensor c = tally::matmul(at, at);
  });
}

// Tiny float32 matmuls, where the per-call cost is all overhead: 1000 calls per timed iteration.
void run_tiny_matmul(int iters) {
  constexpr int kCalls = 1000;
  for (const auto& [m, k, n] : std::vector<std::array<int64_t, 3>>{{2, 2, 2}, {8, 8, 8}, {4, 8, 16}, {16, 16, 16}, {32, 32, 32}}) {
    const tally::Tensor a = tally::randn({m, k}), b = tally::randn({k, n});
    const std::string name = "tiny_matmul_" + std::to_string(m) + "x" + std::to_string(k) + "x" + std::to_string(n);
    time_op(name, iters, kCalls * 2.0 * m * n * k, 0, [&] {
      for (int i = 0; i < kCalls; ++i) tally::Tensor c = tally::matmul(a, b);
    });
  }
}

}  // namespace

int main(int argc, char** argv) {
  if (argc < 2) {
    std::fprintf(stderr, "usage: %s info|peak|matmul_f32|matmul_bf16|memory|tiny_matmul|dispatch [--iters N]\n", argv[0]);
    return 2;
  }
  const std::string group = argv[1];
  int iters = 5;
  for (int i = 2; i + 1 < argc; ++i)
    if (std::string(argv[i]) == "--iters") iters = std::atoi(argv[i + 1]);
  try {
    if (group == "info") run_info();
    else if (group == "peak") run_peak();
    else if (group == "matmul_f32") run_matmul(tally::kFloat32, "f32", {256, 512, 1024, 2048, 4096}, iters);
    else if (group == "matmul_bf16") run_matmul(tally::kBFloat16, "bf16", {512, 1024, 2048}, iters);
    else if (group == "memory") run_memory(iters);
    else if (group == "tiny_matmul") run_tiny_matmul(iters);
    else if (group == "dispatch") run_dispatch(iters);
    else {
      std::fprintf(stderr, "unknown group '%s'\n", group.c_str());
      return 2;
    }
  } catch (const std::exception& e) {
    std::fprintf(stderr, "tally_ops: %s\n", e.what());
    return 1;
  }
  return 0;
}
