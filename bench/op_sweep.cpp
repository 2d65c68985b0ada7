// A sweep of everyday ops on [2048, 2048] tensors (float32 unless named), to find the ones where
// tally is far off PyTorch: bench/op_sweep.py runs this and the same ops in PyTorch 1.13 and
// prints the two side by side. Each op's time is the best of five batches of five calls.
//
// Usage: op_sweep   (prints one JSON object per op: {"op": NAME, "ms": TIME})

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <functional>
#include <utility>
#include <vector>

#include "tally/tally.h"

namespace {

using tally::Tensor;

double best_ms(const std::function<Tensor()>& op) {
  op();
  op();
  double best = 1e30;
  for (int batch = 0; batch < 5; ++batch) {
    const auto start = std::chrono::steady_clock::now();
    for (int call = 0; call < 5; ++call) op();
    best = std::min(best, std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count() / 5);
  }
  return best;
}

}  // namespace

int main() {
  using namespace tally;
  Generator gen(1);
  const int64_t n = 2048;
  const Tensor x = randn({n, n}, {}, &gen), y = randn({n, n}, {}, &gen), row = randn({n}, {}, &gen), col = randn({n, 1}, {}, &gen);
  const Tensor xb = x.to(kBFloat16), yb = y.to(kBFloat16), x3 = randn({64, 256, 256}, {}, &gen);
  const Tensor index = randint(0, n, {n}, TensorOptions(kInt64), &gen), mask = x > 0, w = ones({n}), b = zeros({n});
  // The names are bench/op_sweep.py's: keep the two lists in step.
  const std::vector<std::pair<const char*, std::function<Tensor()>>> ops = {
      {"x + y", [&] { return x + y; }},
      {"x + row", [&] { return x + row; }},
      {"x + col", [&] { return x + col; }},
      {"x.t() + y", [&] { return x.t() + y; }},
      {"x.t() + y.t()", [&] { return x.t() + y.t(); }},
      {"x * 2", [&] { return x * 2; }},
      {"x / y", [&] { return x / y; }},
      {"exp", [&] { return exp(x); }},
      {"log(abs)", [&] { return log(abs(x)); }},
      {"tanh", [&] { return tanh(x); }},
      {"sigmoid", [&] { return sigmoid(x); }},
      {"relu", [&] { return relu(x); }},
      {"gelu", [&] { return gelu(x); }},
      {"gelu tanh", [&] { return gelu(x, "tanh"); }},
      {"silu", [&] { return silu(x); }},
      {"x ** 2", [&] { return pow(x, 2); }},
      {"x ** 3.0", [&] { return pow(x, 3.0); }},
      {"clamp", [&] { return clamp(x, -0.5, 0.5); }},
      {"where", [&] { return where(mask, x, y); }},
      {"masked_fill", [&] { return x.masked_fill(mask, 0.0); }},
      {"x > y", [&] { return x > y; }},
      {"x == 0.5", [&] { return x.eq(0.5); }},
      {"maximum", [&] { return maximum(x, y); }},
      {"addcmul", [&] { return addcmul(x, y, y, 0.5); }},
      {"lerp", [&] { return lerp(x, y, 0.3); }},
      {"sum()", [&] { return x.sum(); }},
      {"sum(0)", [&] { return x.sum({0}); }},
      {"sum(1)", [&] { return x.sum({1}); }},
      {"mean(1)", [&] { return x.mean({1}); }},
      {"var(0)", [&] { return x.var({0}); }},
      {"var(1)", [&] { return x.var({1}); }},
      {"amax(0)", [&] { return x.amax({0}); }},
      {"amax(1)", [&] { return x.amax({1}); }},
      {"max()", [&] { return x.max(); }},
      {"argmax(1)", [&] { return x.argmax(1); }},
      {"prod(1)", [&] { return x.prod(1); }},
      {"any()", [&] { return mask.any(); }},
      {"softmax(-1)", [&] { return softmax(x, -1); }},
      {"softmax(0)", [&] { return softmax(x, 0); }},
      {"log_softmax(-1)", [&] { return log_softmax(x, -1); }},
      {"layer_norm", [&] { return layer_norm(x, {n}, w, b); }},
      {"cross_entropy", [&] { return cross_entropy(x, index); }},
      {"cat dim 0", [&] { return cat({x, y}, 0); }},
      {"cat dim 1", [&] { return cat({x, y}, 1); }},
      {"stack", [&] { return stack({x, y}, 0); }},
      {"x.t().contiguous()", [&] { return x.t().contiguous(); }},
      {"[64,256,256] permute(0,2,1) copy", [&] { return x3.permute({0, 2, 1}).contiguous(); }},
      {"[64,256,256] permute(1,0,2) copy", [&] { return x3.permute({1, 0, 2}).contiguous(); }},
      {"x[:, ::2] copy", [&] { return x.slice(1, 0, std::nullopt, 2).contiguous(); }},
      {"index_select rows", [&] { return x.index_select(0, index); }},
      {"tril", [&] { return tril(x); }},
      {"to bf16", [&] { return x.to(kBFloat16); }},
      {"bf16 to float32", [&] { return xb.to(kFloat32); }},
      {"bf16 x + y", [&] { return xb + yb; }},
      {"bf16 x * float32 y", [&] { return xb * y; }},
      {"bf16 gelu", [&] { return gelu(xb); }},
      {"bf16 softmax(-1)", [&] { return softmax(xb, -1); }},
      {"bf16 sum(1)", [&] { return xb.sum({1}); }},
  };
  for (const auto& [name, op] : ops) std::printf("{\"op\": \"%s\", \"ms\": %.5f}\n", name, best_ms(op));
}
