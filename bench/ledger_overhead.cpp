// What accounting costs: a 1024³ float32 matmul loop with and without a FlopCounter (target:
// < 2% slower; the calls alternate one by one), the per-op dispatch cost of 100k tiny (8-element)
// ops with autograd recording (target: < 1 µs), of the in-place and out= forms, and backward's
// cost per graph node, each next to PyTorch eager measured in the same run.
// Usage: ledger_overhead [--rounds N]

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <memory>
#include <utility>
#include <string>
#include <vector>

#include "tally/tally.h"

using namespace tally;
using Clock = std::chrono::steady_clock;

namespace {

double seconds_since(Clock::time_point t) { return std::chrono::duration<double>(Clock::now() - t).count(); }

/// Median seconds of a 1024³ matmul without and with a FlopCounter, over `pairs` calls of each.
/// The calls alternate one by one: this machine's speed shifts by ~30% for seconds at a time
/// (Note [The promised clock]), and loops of ten calls each landed in different phases.
std::pair<double, double> matmul_pairs(int pairs) {
  Tensor a = randn({1024, 1024}), b = randn({1024, 1024});
  Tensor c = matmul(a, b);
  std::vector<double> off, on;
  for (int i = 0; i < pairs; ++i) {
    auto t = Clock::now();
    c = matmul(a, b);
    off.push_back(seconds_since(t));
    accounting::FlopCounter counter;
    t = Clock::now();
    c = matmul(a, b);
    on.push_back(seconds_since(t));
  }
  std::sort(off.begin(), off.end());
  std::sort(on.begin(), on.end());
  return {off[off.size() / 2], on[on.size() / 2]};
}

/// Seconds per op for `n` ops of y = y * w + x on 8-element tensors (3 ops per step: mul, add
/// and the scalar-free chain), with w requiring grad so every op records a graph node.
double tiny_ops(int n, bool counted) {
  Tensor x = ones({8}), w = ones({8}).requires_grad_();
  std::unique_ptr<accounting::FlopCounter> counter;
  if (counted) counter = std::make_unique<accounting::FlopCounter>();
  Tensor y = x;
  auto t = Clock::now();
  for (int i = 0; i < n / 2; ++i) {
    y = y * w;  // recorded: w requires grad
    y = y + x;
    if (i % 64 == 63) y = y.detach();  // keep the graph (and its memory) bounded
  }
  return seconds_since(t) / n;
}

/// Seconds per graph node of backward() through graphs of 2001 nodes (1000 steps of y = y * w + x,
/// then sum), the size of a small model's step; the median of `graphs` runs.
double backward_per_node(int graphs) {
  Tensor x = ones({8}), w = ones({8}).requires_grad_();
  std::vector<double> runs;
  for (int g = 0; g < graphs; ++g) {
    Tensor y = x;
    for (int i = 0; i < 1000; ++i) y = y * w + x;
    Tensor loss = y.sum();
    auto t = Clock::now();
    loss.backward();
    runs.push_back(seconds_since(t) / 2001);
  }
  std::sort(runs.begin(), runs.end());
  return runs[runs.size() / 2];
}

/// Seconds per op of `n` in-place multiplies (y.mul_(w)) and of `n` out= multiplies
/// (mul_out(out, a, w)) on 8-element tensors, no graph recorded.
std::pair<double, double> tiny_forms(int n) {
  Tensor y = ones({8}), w = ones({8}), a = ones({8}), out = empty({8});
  auto t = Clock::now();
  for (int i = 0; i < n; ++i) y.mul_(w);
  const double in_place = seconds_since(t) / n;
  t = Clock::now();
  for (int i = 0; i < n; ++i) mul_out(out, a, w);
  return {in_place, seconds_since(t) / n};
}

/// PyTorch's figures for the same loops: seconds per tiny op, per backward node, per in-place
/// op and per out= op.
struct TorchFigures {
  double op = 0, node = 0, in_place = 0, out = 0;
};
TorchFigures torch_tiny_ops(int n, int graphs) {
  const std::string cmd =
      "/usr/bin/python3 -c \"import torch,time,statistics\n"
      "torch.set_num_threads(2)\n"
      "x=torch.ones(8); w=torch.ones(8,requires_grad=True); y=x\n"
      "t=time.perf_counter()\n"
      "for i in range(" + std::to_string(n / 2) + "):\n"
      "  y=y*w; y=y+x\n"
      "  if i%64==63: y=y.detach()\n"
      "print((time.perf_counter()-t)/" + std::to_string(n) + ")\n"
      "runs=[]\n"
      "for g in range(" + std::to_string(graphs) + "):\n"
      "  y=x\n"
      "  for i in range(1000): y=y*w+x\n"
      "  loss=y.sum(); t=time.perf_counter(); loss.backward(); runs.append((time.perf_counter()-t)/2001)\n"
      "print(statistics.median(runs))\n"
      "y=torch.ones(8); w=torch.ones(8); a=torch.ones(8); o=torch.empty(8)\n"
      "t=time.perf_counter()\n"
      "for i in range(" + std::to_string(n) + "): y.mul_(w)\n"
      "print((time.perf_counter()-t)/" + std::to_string(n) + ")\n"
      "t=time.perf_counter()\n"
      "for i in range(" + std::to_string(n) + "): torch.mul(a, w, out=o)\n"
      "print((time.perf_counter()-t)/" + std::to_string(n) + ")\" 2>/dev/null";
  TorchFigures f;
  FILE* p = popen(cmd.c_str(), "r");
  if (!p) return f;
  if (std::fscanf(p, "%lf %lf %lf %lf", &f.op, &f.node, &f.in_place, &f.out) != 4) f = {};
  pclose(p);
  return f;
}

}  // namespace

int main(int argc, char** argv) {
  int rounds = 5;
  for (int i = 1; i + 1 < argc; ++i)
    if (std::strcmp(argv[i], "--rounds") == 0) rounds = std::atoi(argv[i + 1]);
  const auto [m_off, m_on] = matmul_pairs(20 * rounds);
  std::printf("matmul 1024^3 float32: %.3f ms without counter, %.3f ms with: overhead %+.2f%% (target < 2%%)\n", m_off * 1e3,
              m_on * 1e3, 100 * (m_on / m_off - 1));
  const int n = 100000;
  tiny_ops(n / 10, false);  // warm-up
  std::vector<double> plain_runs, counted_runs;
  for (int r = 0; r < std::max(rounds, 5); ++r) {  // interleaved; the median of each
    plain_runs.push_back(tiny_ops(n, false));
    counted_runs.push_back(tiny_ops(n, true));
  }
  std::sort(plain_runs.begin(), plain_runs.end());
  std::sort(counted_runs.begin(), counted_runs.end());
  const double plain = plain_runs[plain_runs.size() / 2], counted = counted_runs[counted_runs.size() / 2];
  const double node = backward_per_node(50);
  std::vector<double> in_place_runs, out_runs;
  for (int r = 0; r < std::max(rounds, 5); ++r) {
    const auto [in_place, out] = tiny_forms(n);
    in_place_runs.push_back(in_place);
    out_runs.push_back(out);
  }
  std::sort(in_place_runs.begin(), in_place_runs.end());
  std::sort(out_runs.begin(), out_runs.end());
  const double in_place = in_place_runs[in_place_runs.size() / 2], out = out_runs[out_runs.size() / 2];
  const TorchFigures t = torch_tiny_ops(n, 50);
  const double torch = t.op, torch_node = t.node;
  std::printf("tiny ops (8 elements, autograd recording): %.0f ns/op, %.0f ns/op with a FlopCounter (target < 1000 ns)\n",
              plain * 1e9, counted * 1e9);
  if (torch > 0) std::printf("PyTorch eager, same loop, same run: %.0f ns/op: tally is %.1fx faster\n", torch * 1e9, torch / counted);
  std::printf("backward through 2001-node graphs: %.0f ns/node", node * 1e9);
  if (torch_node > 0) std::printf("; PyTorch %.0f ns/node: tally is %.1fx faster", torch_node * 1e9, torch_node / node);
  std::printf("\n");
  std::printf("in place (y.mul_(w), 8 elements): %.0f ns/op", in_place * 1e9);
  if (t.in_place > 0) std::printf("; PyTorch %.0f ns/op: tally is %.1fx faster", t.in_place * 1e9, t.in_place / in_place);
  std::printf("\nout= (mul_out(out, a, w), 8 elements): %.0f ns/op", out * 1e9);
  if (t.out > 0) std::printf("; PyTorch %.0f ns/op: tally is %.1fx faster", t.out * 1e9, t.out / out);
  std::printf("\n");
  return 0;
}
