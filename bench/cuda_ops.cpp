// tally on the GPU: the measurements bench/cuda/compare.py stands next to PyTorch's in the same run
// (bench/cuda/torch_ops.py). Prints one JSON object per line: {"name", "value", "unit"}.
//   bandwidth: y.copy_(x), x + y, x * 2, softmax(x, -1) on 1 GiB float32 (bytes read + written)
//   matmul: 8192³ in bfloat16, float16, float32 (TF32 on and off), and FP8 e4m3 via scaled_mm
//   launch: host time per op of a chain of small ops with autograd recording
// Every figure is the median of several rounds timed with CUDA events.

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <functional>
#include <string>
#include <vector>

#include "tally/tally.h"

using namespace tally;

namespace {

/// Median GPU seconds of one call on cuda:0 (5 rounds of `iters` calls, CUDA events).
double time_gpu(const std::function<void()>& fn, int iters, int rounds = 5) { return cuda::time_per_call(0, fn, iters, rounds); }

void report(const std::string& name, double value, const char* unit) {
  std::printf("{\"name\": \"%s\", \"value\": %.6g, \"unit\": \"%s\"}\n", name.c_str(), value, unit);
  std::fflush(stdout);
}

}  // namespace

int main(int argc, char** argv) {
  if (!cuda::is_available()) {
    std::printf("cuda_ops: no CUDA GPU here (or tally was built without CUDA): nothing to measure\n");
    return 0;
  }
  const bool quick = argc > 1 && std::string(argv[1]) == "--quick";
  const Device gpu("cuda:0");
  const cuda::DeviceProperties p = cuda::get_device_properties(0);
  std::printf("{\"device\": \"%s\", \"sm\": %d, \"memory_gib\": %.1f}\n", p.name.c_str(), p.multiprocessors,
              p.total_memory / double(1 << 30));
  // ---- bandwidth: 1 GiB float32 operands ----
  {
    NoGradGuard no_grad;
    const int64_t n = quick ? (int64_t{1} << 26) : (int64_t{1} << 28);  // 1 GiB of float32
    const double gib = n * 4.0;
    Tensor x = randn({n}, TensorOptions().device(gpu)), y = randn({n}, TensorOptions().device(gpu));
    Tensor out = empty({n}, gpu);
    report("copy_GBps", 2 * gib / time_gpu([&] { out.copy_(x); }, 10) / 1e9, "GB/s");
    report("add_GBps", 3 * gib / time_gpu([&] { Tensor z = x + y; }, 10) / 1e9, "GB/s");
    report("mul_scalar_GBps", 2 * gib / time_gpu([&] { Tensor z = x * 2; }, 10) / 1e9, "GB/s");
    Tensor rows = x.view({-1, 4096});
    report("softmax_GBps", 2 * gib / time_gpu([&] { Tensor z = rows.softmax(-1); }, 10) / 1e9, "GB/s");
    Tensor xb = x.to(kBFloat16), yb = y.to(kBFloat16);
    report("add_bf16_GBps", 3 * gib / 2 / time_gpu([&] { Tensor z = xb + yb; }, 10) / 1e9, "GB/s");
  }
  cuda::empty_cache();

  // ---- matmul 8192³ ----
  {
    NoGradGuard no_grad;
    const int64_t s = quick ? 4096 : 8192;
    const double flops = 2.0 * s * s * s;
    Tensor a32 = randn({s, s}, TensorOptions().device(gpu)), b32 = randn({s, s}, TensorOptions().device(gpu));
    for (Dtype d : {kBFloat16, kFloat16}) {
      Tensor a = a32.to(d), b = b32.to(d);
      report(std::string("matmul_") + std::string(dtype_name(d)) + "_TFLOPs", flops / time_gpu([&] { Tensor c = matmul(a, b); }, 10) / 1e12, "TFLOP/s");
    }
    cuda::set_allow_tf32(true);
    report("matmul_tf32_TFLOPs", flops / time_gpu([&] { Tensor c = matmul(a32, b32); }, 5) / 1e12, "TFLOP/s");
    cuda::set_allow_tf32(false);
    report("matmul_float32_TFLOPs", flops / time_gpu([&] { Tensor c = matmul(a32, b32); }, 2, 3) / 1e12, "TFLOP/s");
    Tensor a8 = a32.to(kFloat8_e4m3fn), w8 = b32.to(kFloat8_e4m3fn);
    Tensor one = ones({}, TensorOptions().device(gpu));
    report("matmul_fp8_e4m3_TFLOPs",
           flops / time_gpu([&] { Tensor c = scaled_mm(a8, w8.t(), one, one, kBFloat16); }, 10) / 1e12, "TFLOP/s");
  }
  cuda::empty_cache();

  // ---- launch overhead with autograd recording ----
  {
    Tensor w = ones({1024}, TensorOptions().device(gpu)).requires_grad_();
    const int ops = 2000;
    auto chain = [&] {
      Tensor y = w;
      for (int i = 0; i < ops / 2; ++i) y = y * 1.0001 + 0.5;
      return y;
    };
    chain();
    cuda::synchronize();
    std::vector<double> per_op;
    for (int r = 0; r < 5; ++r) {
      auto t0 = std::chrono::steady_clock::now();
      Tensor y = chain();
      cuda::synchronize();
      std::chrono::duration<double> took = std::chrono::steady_clock::now() - t0;
      per_op.push_back(took.count() / ops);
    }
    std::sort(per_op.begin(), per_op.end());
    report("launch_autograd_us_per_op", per_op[2] * 1e6, "us");
  }
  return 0;
}
