// One AdamW step over N float32 parameters: tally's fused pass (tally/optim/fused.h) against the
// same update as PyTorch 1.13's single-tensor AdamW runs it, a chain of in-place tensor ops each
// of which is a pass over memory. Both report GB/s from the bytes the fused row declares
// (read p, g, m, v; write p, m, v): the step is memory-bound, so passes set its time.
#include <benchmark/benchmark.h>

#include <cmath>

#include "tally/tally.h"

using namespace tally;

namespace {

struct Setup {
  Tensor p, g;
  explicit Setup(int64_t n) : p(randn({n}).requires_grad_()), g(randn({n})) { p.set_grad(g); }
};

void BM_AdamWFused(benchmark::State& state) {
  Setup s(state.range(0));
  optim::AdamW opt({s.p}, optim::AdamWOptions(1e-3));
  for (auto _ : state) opt.step();
  state.SetBytesProcessed(state.iterations() * 7 * 4 * state.range(0));
}

// PyTorch's _single_tensor_adamw, op for op.
void BM_AdamWOpChain(benchmark::State& state) {
  Setup s(state.range(0));
  const double lr = 1e-3, wd = 1e-2, beta1 = 0.9, beta2 = 0.999, eps = 1e-8;
  Tensor m = zeros_like(s.p), v = zeros_like(s.p);
  Tensor p = s.p.detach();
  int64_t step = 0;
  NoGradGuard no_grad;
  for (auto _ : state) {
    ++step;
    p.mul_(1 - lr * wd);
    m.mul_(beta1).add_(s.g, 1 - beta1);
    v.mul_(beta2).addcmul_(s.g, s.g, 1 - beta2);
    const double bc1 = 1 - std::pow(beta1, step), bc2 = 1 - std::pow(beta2, step);
    Tensor denom = (v.sqrt() / std::sqrt(bc2)).add_(eps);
    p.addcdiv_(m, denom, -lr / bc1);
  }
  state.SetBytesProcessed(state.iterations() * 7 * 4 * state.range(0));
}

}  // namespace

BENCHMARK(BM_AdamWFused)->RangeMultiplier(16)->Range(1 << 12, 1 << 24)->Unit(benchmark::kMicrosecond);
BENCHMARK(BM_AdamWOpChain)->RangeMultiplier(16)->Range(1 << 12, 1 << 24)->Unit(benchmark::kMicrosecond);

BENCHMARK_MAIN();
