// einsum must run at matmul speed and its pattern handling must cost well under a microsecond:
// this program times einsum("b s h, b t h -> b s t") on (32, 512, 64) against tally's own
// matmul(x, y.transpose(-2, -1)) and, when /usr/bin/python3 has torch, against torch.einsum in
// the same run (2 threads); then the per-call overhead of the cached pattern on tiny tensors.
//
// Usage: einops [--reps N]

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <functional>
#include <string>
#include <vector>

#include "tally/einops/einsum_plan.h"
#include "tally/tally.h"

namespace {

using Clock = std::chrono::steady_clock;
using tally::Tensor;

constexpr const char* kPattern = "b s h, b t h -> b s t";

double seconds(const std::function<void()>& fn) {
  const auto t0 = Clock::now();
  fn();
  return std::chrono::duration<double>(Clock::now() - t0).count();
}

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v[v.size() / 2];
}

// The two sides alternate rep by rep, so drift on the shared machine hits both alike.
std::pair<double, double> time_pair(const std::function<void()>& a, const std::function<void()>& b, int reps) {
  a();
  b();
  std::vector<double> ta, tb;
  for (int r = 0; r < reps; ++r) {
    ta.push_back(seconds(a));
    tb.push_back(seconds(b));
  }
  return {median(ta), median(tb)};
}

// torch.einsum on the same shapes, in seconds per call for float32 and bfloat16 (negative when
// torch is not available).
std::pair<double, double> torch_einsum(int reps) {
  const std::string cmd =
      "/usr/bin/python3 -c \"import torch,time\n"
      "torch.set_num_threads(2)\n"
      "def t(dt):\n"
      "  x=torch.randn(32,512,64).to(dt); y=torch.randn(32,512,64).to(dt)\n"
      "  torch.einsum('bsh,bth->bst',x,y)\n"
      "  ts=[]\n"
      "  for _ in range(" + std::to_string(reps) + "):\n"
      "    s=time.perf_counter(); torch.einsum('bsh,bth->bst',x,y); ts.append(time.perf_counter()-s)\n"
      "  return sorted(ts)[len(ts)//2]\n"
      "print(t(torch.float32), t(torch.bfloat16))\" 2>/dev/null";
  FILE* p = popen(cmd.c_str(), "r");
  if (!p) return {-1, -1};
  double f32 = -1, bf16 = -1;
  if (std::fscanf(p, "%lf %lf", &f32, &bf16) != 2) f32 = bf16 = -1;
  pclose(p);
  return {f32, bf16};
}

}  // namespace

int main(int argc, char** argv) {
  int reps = 15;
  for (int i = 1; i + 1 < argc; ++i)
    if (std::string(argv[i]) == "--reps") reps = std::max(3, std::atoi(argv[i + 1]));
  try {
    const double flops = 2.0 * 32 * 512 * 512 * 64;
    const auto [torch_f32, torch_bf16] = torch_einsum(reps);
    std::printf("einsum(\"%s\") on (32, 512, 64), median of %d reps\n", kPattern, reps);
    for (tally::Dtype dt : {tally::kFloat32, tally::kBFloat16}) {
      const Tensor x = tally::randn({32, 512, 64}).to(dt), y = tally::randn({32, 512, 64}).to(dt);
      const auto [t_einsum, t_matmul] = time_pair([&] { tally::einops::einsum(x, y, kPattern); },
                                                  [&] { tally::matmul(x, y.transpose(-2, -1)); }, reps);
      const double torch = dt == tally::kFloat32 ? torch_f32 : torch_bf16;
      std::printf("  %-8s einsum %8.3f ms (%6.1f GFLOP/s)   matmul %8.3f ms   einsum/matmul speed %.2fx", tally::dtype_name(dt).data(),
                  t_einsum * 1e3, flops / t_einsum * 1e-9, t_matmul * 1e3, t_matmul / t_einsum);
      if (torch > 0) std::printf("   torch.einsum %8.3f ms: tally %.2fx", torch * 1e3, torch / t_einsum);
      std::printf("\n");
    }

    // Overhead per call on tiny tensors, where the matmul itself is almost free.
    const Tensor a = tally::randn({1, 2, 2}), b = tally::randn({1, 2, 2});
    constexpr int kCalls = 200000;
    const auto [t_tiny_einsum, t_tiny_matmul] =
        time_pair([&] { for (int i = 0; i < kCalls; ++i) tally::einops::einsum(a, b, kPattern); },
                  [&] { for (int i = 0; i < kCalls; ++i) tally::matmul(a, b.transpose(-2, -1)); }, 7);
    const std::vector<Tensor> operands = {a, b};
    std::vector<double> lookups;
    for (int r = 0; r < 7; ++r)
      lookups.push_back(seconds([&] { for (int i = 0; i < kCalls; ++i) tally::einops::detail::einsum_plan(kPattern, operands); }));
    std::printf("tiny (1, 2, 2): einsum %.0f ns/call, matmul(x, y.transpose) %.0f ns/call: einsum overhead %.0f ns/call\n",
                t_tiny_einsum / kCalls * 1e9, t_tiny_matmul / kCalls * 1e9, (t_tiny_einsum - t_tiny_matmul) / kCalls * 1e9);
    std::printf("cached parse + plan lookup alone: %.0f ns/call\n", median(lookups) / kCalls * 1e9);
  } catch (const std::exception& e) {
    std::fprintf(stderr, "einops bench failed: %s\n", e.what());
    return 1;
  }
  return 0;
}
