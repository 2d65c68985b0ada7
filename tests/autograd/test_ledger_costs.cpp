// The ledger against the cost conventions of DESIGN.md, op by op, on random shapes (ggml's
// test-backend-ops habit): matmul 2·M·N·K; one FLOP per output element per arithmetic step;
// reductions one FLOP per input element; views free; bytes = inputs read + output written.

#include <gtest/gtest.h>

#include <functional>
#include <random>

#include "tally/ops/registry.h"
#include "tally/tally.h"

using namespace tally;
using accounting::FlopCounter;
using accounting::Phase;

namespace {

std::mt19937 rng(7);
int64_t dim() { return std::uniform_int_distribution<int64_t>(1, 9)(rng); }

/// Run `fn` under a fresh counter and return the totals of op `name`.
accounting::OpTotals run(const std::string& name, const std::function<Tensor()>& fn, Tensor* out = nullptr) {
  FlopCounter counter;
  Tensor r = fn();
  if (out) *out = r;
  return counter.op(name, Phase::Forward);
}

}  // namespace

TEST(LedgerCosts, EveryRegisteredUnaryOp) {
  // Each op in the registry puts its declared FLOPs per element on the ledger, reads its input
  // once and writes its output once.
  Tensor x = rand({dim(), dim()}) + 0.5;
  for (const ops::UnaryOpInfo& u : ops::unary_ops()) {
    const auto t = run(std::string(u.name), [&] { return u.fn(x); });
    EXPECT_EQ(t.calls, 1) << u.name;
    EXPECT_EQ(t.flops, u.flops * x.numel()) << u.name;
    EXPECT_EQ(t.bytes_read, x.nbytes()) << u.name;
    EXPECT_EQ(t.bytes_written, x.nbytes()) << u.name;
  }
}

TEST(LedgerCosts, ElementwiseUnary) {
  const std::vector<std::pair<std::string, int64_t>> unary = {{"neg", 1}, {"abs", 1}, {"sqrt", 1}, {"rsqrt", 2}, {"exp", 1},
                                                               {"log", 1}, {"tanh", 1}, {"sigmoid", 4}, {"silu", 5}, {"relu", 1},
                                                               {"square", 1}, {"erf", 1}, {"gelu", 5}};
  for (int trial = 0; trial < 3; ++trial) {
    Tensor x = rand({dim(), dim(), dim()}) + 0.5;
    const std::map<std::string, std::function<Tensor()>> call = {
        {"neg", [&] { return neg(x); }},       {"abs", [&] { return abs(x); }},         {"sqrt", [&] { return sqrt(x); }},
        {"rsqrt", [&] { return rsqrt(x); }},   {"exp", [&] { return exp(x); }},         {"log", [&] { return log(x); }},
        {"tanh", [&] { return tanh(x); }},     {"sigmoid", [&] { return sigmoid(x); }}, {"silu", [&] { return silu(x); }},
        {"relu", [&] { return relu(x); }},     {"square", [&] { return square(x); }},   {"erf", [&] { return erf(x); }},
        {"gelu", [&] { return gelu(x); }}};
    for (const auto& [name, steps] : unary) {
      const auto t = run(name, call.at(name));
      EXPECT_EQ(t.calls, 1) << name;
      EXPECT_EQ(t.flops, steps * x.numel()) << name;
      EXPECT_EQ(t.bytes_read, x.nbytes()) << name;
      EXPECT_EQ(t.bytes_written, x.nbytes()) << name;
    }
    EXPECT_EQ(run("gelu", [&] { return gelu(x, "tanh"); }).flops, 9 * x.numel());
    EXPECT_EQ(run("clamp", [&] { return clamp(x, 0.6, 0.9); }).flops, 2 * x.numel());
    EXPECT_EQ(run("pow", [&] { return x.pow(3); }).flops, x.numel());
  }
}

TEST(LedgerCosts, ElementwiseBinaryWithBroadcast) {
  for (int trial = 0; trial < 3; ++trial) {
    const int64_t a0 = dim(), a1 = dim(), a2 = dim();
    Tensor a = rand({a0, 1, a2}) + 0.5, b = rand({a1, 1}, kFloat64) + 0.5;  // broadcast, mixed dtypes
    for (const std::string name : {"add", "sub", "mul", "div", "maximum", "minimum", "pow", "lt"}) {
      Tensor out;
      const auto t = run(name, [&]() -> Tensor {
        if (name == "add") return a + b;
        if (name == "sub") return a - b;
        if (name == "mul") return a * b;
        if (name == "div") return a / b;
        if (name == "maximum") return maximum(a, b);
        if (name == "minimum") return minimum(a, b);
        if (name == "pow") return pow(a, b);
        return a < b;
      }, &out);
      EXPECT_EQ(out.numel(), a0 * a1 * a2) << name;
      EXPECT_EQ(t.flops, out.numel()) << name;
      EXPECT_EQ(t.bytes_read, a.nbytes() + b.nbytes()) << name;  // each input read once, at its own dtype
      EXPECT_EQ(t.bytes_written, out.nbytes()) << name;
    }
  }
}

TEST(LedgerCosts, ReductionsSoftmaxMatmulJoinsViews) {
  for (int trial = 0; trial < 3; ++trial) {
    const int64_t m = dim(), k = dim(), n = dim(), bsz = dim();
    Tensor x = rand({bsz, m, k}) + 0.5, w = rand({k, n});
    for (const std::string name : {"sum", "prod", "amax", "amin"}) {
      Tensor out;
      const auto t = run(name, [&]() -> Tensor {
        if (name == "sum") return x.sum({1});
        if (name == "prod") return prod(x, {1});
        if (name == "amax") return amax(x, {1});
        return amin(x, {1});
      }, &out);
      EXPECT_EQ(t.flops, x.numel()) << name;
      EXPECT_EQ(t.bytes_read, x.nbytes()) << name;
      EXPECT_EQ(t.bytes_written, out.nbytes()) << name;
    }
    EXPECT_EQ(run("softmax", [&] { return softmax(x, 1); }).flops, 5 * x.numel());
    const auto mm = run("matmul", [&] { return matmul(x, w); });
    EXPECT_EQ(mm.flops, 2 * bsz * m * n * k);
    EXPECT_EQ(mm.bytes_read, x.nbytes() + w.nbytes());
    EXPECT_EQ(mm.bytes_written, bsz * m * n * 4);
    const auto c = run("cat", [&] { return cat({x, x}, 2); });
    EXPECT_EQ(c.flops, 0);
    EXPECT_EQ(c.bytes_read, 2 * x.nbytes());
    EXPECT_EQ(c.bytes_written, 2 * x.nbytes());
    FlopCounter counter;
    Tensor v = x.transpose(0, 2).unsqueeze(0).expand({3, k, m, bsz}).select(0, 1).slice(0, 0, 1);
    EXPECT_EQ(counter.total_flops(), 0);
    EXPECT_EQ(counter.totals(Phase::Forward).bytes_read + counter.totals(Phase::Forward).bytes_written, 0);
  }
}

TEST(LedgerCosts, AnExpandedInputIsReadAtTheBytesItHolds) {
  // Note [Bytes read]: a stride-0 dim repeats the same bytes. An expanded batch operand of a
  // product reads its one matrix (2048 B), not eight (16384 B); an explicitly expanded bias reads
  // 128 B, as implicit broadcasting does.
  const auto product = run("matmul", [] { return matmul(ones({16, 32}).expand({8, 16, 32}), ones({8, 32, 2})); });
  EXPECT_EQ(product.bytes_read, 16 * 32 * 4 + 8 * 32 * 2 * 4);
  const auto implicit = run("add", [] { return ones({64, 32}) + ones({32}); });
  const auto expanded = run("add", [] { return ones({64, 32}) + ones({32}).expand({64, 32}); });
  EXPECT_EQ(implicit.bytes_read, 64 * 32 * 4 + 32 * 4);
  EXPECT_EQ(expanded.bytes_read, implicit.bytes_read);
  // A scalar expanded to a matrix (a sum's gradient) is one element.
  EXPECT_EQ(run("mul", [] { return ones({64, 16}) * full({}, 2.0).expand({64, 16}); }).bytes_read, 64 * 16 * 4 + 4);
}
