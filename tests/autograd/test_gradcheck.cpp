// gradcheck on every differentiable op, driven by the registry apply() fills: a new op with a
// backward rule fails RegistryIsCovered until a check for it is written here.

#include <gtest/gtest.h>

#include <functional>
#include <map>
#include <set>

#include "tally/ops/apply.h"
#include "tally/ops/registry.h"
#include "tally/tally.h"

using namespace tally;
using namespace tally::indexing;
using autograd::gradcheck;

namespace {

Generator gen(99);

/// A float64 leaf of `sizes`, requiring grad; `layout` makes it non-contiguous: "t" transposed
/// (last two dims), "s" a stepped slice of a larger leaf.
Tensor leaf(std::vector<int64_t> sizes, const std::string& layout = "", double lo = -2, double hi = 2) {
  Tensor base;
  if (layout == "t") {
    std::swap(sizes[sizes.size() - 1], sizes[sizes.size() - 2]);
    base = (rand(sizes, kFloat64, &gen) * (hi - lo) + lo).transpose(-1, -2);
  } else if (layout == "s") {
    std::vector<int64_t> big = sizes;
    big.back() *= 2;
    base = (rand(big, kFloat64, &gen) * (hi - lo) + lo).slice(-1, 0, std::nullopt, 2);
  } else {
    base = rand(sizes, kFloat64, &gen) * (hi - lo) + lo;
  }
  Tensor x = base.detach();
  x.requires_grad_();
  return x;
}

struct Case {
  std::string label;
  std::function<Tensor(const TensorList&)> fn;
  TensorList inputs;
};

std::multimap<std::string, Case> cases() {
  std::multimap<std::string, Case> c;
  auto add = [&](const std::string& op, const std::string& label, std::function<Tensor(const TensorList&)> fn, TensorList in) {
    c.emplace(op, Case{label, std::move(fn), std::move(in)});
  };
  add("add", "broadcast", [](const TensorList& v) { return v[0] + v[1]; }, {leaf({3, 4}, "t"), leaf({4})});
  add("sub", "broadcast", [](const TensorList& v) { return v[0] - v[1]; }, {leaf({2, 1, 4}), leaf({3, 1}, "s")});
  add("mul", "broadcast", [](const TensorList& v) { return v[0] * v[1]; }, {leaf({3, 4}, "s"), leaf({3, 1})});
  add("div", "broadcast", [](const TensorList& v) { return v[0] / v[1]; }, {leaf({3, 4}), leaf({4}, "", 0.5, 2)});
  add("pow", "tensor exponent", [](const TensorList& v) { return pow(v[0], v[1]); }, {leaf({3, 4}, "t", 0.5, 2), leaf({4})});
  add("pow", "scalar exponent", [](const TensorList& v) { return v[0].pow(3); }, {leaf({3, 4}, "s")});
  add("maximum", "", [](const TensorList& v) { return maximum(v[0], v[1]); }, {leaf({3, 4}), leaf({3, 4}, "t")});
  add("minimum", "", [](const TensorList& v) { return minimum(v[0], v[1]); }, {leaf({3, 4}, "s"), leaf({4})});
  add("neg", "", [](const TensorList& v) { return -v[0]; }, {leaf({3, 4}, "t")});
  add("abs", "", [](const TensorList& v) { return abs(v[0]); }, {leaf({3, 4}, "s")});
  add("sqrt", "", [](const TensorList& v) { return sqrt(v[0]); }, {leaf({3, 4}, "t", 0.5, 2)});
  add("rsqrt", "", [](const TensorList& v) { return rsqrt(v[0]); }, {leaf({3, 4}, "", 0.5, 2)});
  add("exp", "", [](const TensorList& v) { return exp(v[0]); }, {leaf({3, 4}, "s")});
  add("log", "", [](const TensorList& v) { return log(v[0]); }, {leaf({3, 4}, "t", 0.5, 2)});
  add("tanh", "", [](const TensorList& v) { return tanh(v[0]); }, {leaf({3, 4})});
  add("sigmoid", "", [](const TensorList& v) { return sigmoid(v[0]); }, {leaf({3, 4}, "t")});
  add("silu", "", [](const TensorList& v) { return silu(v[0]); }, {leaf({3, 4}, "s")});
  add("relu", "", [](const TensorList& v) { return relu(v[0]); }, {leaf({3, 4}, "t")});
  add("square", "", [](const TensorList& v) { return square(v[0]); }, {leaf({3, 4})});
  add("erf", "", [](const TensorList& v) { return erf(v[0]); }, {leaf({3, 4}, "s")});
  add("gelu", "erf", [](const TensorList& v) { return gelu(v[0]); }, {leaf({3, 4}, "t")});
  add("gelu", "tanh", [](const TensorList& v) { return gelu(v[0], "tanh"); }, {leaf({3, 4})});
  add("clamp", "", [](const TensorList& v) { return clamp(v[0], -0.5, 0.7); }, {leaf({3, 4}, "s")});
  add("where", "broadcast", [](const TensorList& v) { return where(v[0] > 0, v[0], v[1]); }, {leaf({3, 4}), leaf({4})});
  add("triu_tril", "", [](const TensorList& v) { return triu(v[0], 1) + tril(v[0]); }, {leaf({4, 5}, "t")});
  add("sum", "dims", [](const TensorList& v) { return v[0].sum({0, 2}, true); }, {leaf({2, 3, 4}, "t")});
  add("prod", "dim", [](const TensorList& v) { return prod(v[0], {1}); }, {leaf({3, 4}, "s", 0.5, 2)});
  add("amax", "dim", [](const TensorList& v) { return amax(v[0], {1}); }, {leaf({3, 4}, "t")});
  add("amin", "all", [](const TensorList& v) { return amin(v[0]); }, {leaf({3, 4})});
  add("max", "every element", [](const TensorList& v) { return v[0].max(); }, {leaf({3, 4}, "t")});
  add("min", "every element", [](const TensorList& v) { return v[0].min(); }, {leaf({3, 4}, "s")});
  add("max", "dim", [](const TensorList& v) { return std::get<0>(v[0].max(1)); }, {leaf({3, 4}, "t")});
  add("min", "dim 0, keepdim", [](const TensorList& v) { return std::get<0>(v[0].min(0, true)); }, {leaf({3, 4}, "s")});
  add("softmax", "dim 0", [](const TensorList& v) { return softmax(v[0], 0); }, {leaf({3, 4}, "t")});
  add("softmax", "log", [](const TensorList& v) { return log_softmax(v[0], -1); }, {leaf({3, 4}, "s")});
  add("softmax", "attention: scaled, causal", [](const TensorList& v) { return attention_softmax(v[0], 0.7, true); }, {leaf({2, 3, 4}, "t")});
  // Two causal blocks of 64 query rows (the second partial), more keys than queries, E ≠ Ev.
  add("scaled_dot_product_attention", "causal, two blocks", [](const TensorList& v) { return scaled_dot_product_attention(v[0], v[1], v[2], true); },
      {leaf({1, 70, 3}), leaf({1, 70, 3}), leaf({1, 70, 2})});
  add("scaled_dot_product_attention", "S > L, scale", [](const TensorList& v) { return scaled_dot_product_attention(v[0], v[1], v[2], false, 0.4); },
      {leaf({2, 4, 3}, "t"), leaf({2, 6, 3}), leaf({2, 6, 5})});
  add("scaled_dot_product_attention", "stacked q, k, v", [](const TensorList& v) { return scaled_dot_product_attention_packed(v[0], true); },
      {leaf({2, 66, 3, 1, 2}, "t")});
  add("layer_norm", "weight and bias, transposed", [](const TensorList& v) { return layer_norm(v[0], {3}, v[1], v[2], 1e-3); },
      {leaf({4, 3}, "t"), leaf({3}), leaf({3})});
  add("layer_norm", "two dims, no affine", [](const TensorList& v) { return layer_norm(v[0], {3, 4}); }, {leaf({2, 3, 4}, "s")});
  add("layer_norm", "bias only", [](const TensorList& v) { return layer_norm(v[0], {4}, Tensor(), v[1]); }, {leaf({3, 4}), leaf({4})});
  add("rms_norm", "weight, sliced", [](const TensorList& v) { return rms_norm(v[0], {4}, v[1], 1e-3); }, {leaf({3, 4}, "s"), leaf({4})});
  add("rms_norm", "two dims, default eps", [](const TensorList& v) { return rms_norm(v[0], {3, 4}); }, {leaf({2, 3, 4}, "t")});
  add("addcmul", "broadcast", [](const TensorList& v) { return addcmul(v[0], v[1], v[2], 0.5); },
      {leaf({3, 4}), leaf({3, 4}, "t"), leaf({4})});
  add("addcdiv", "", [](const TensorList& v) { return addcdiv(v[0], v[1], v[2], -2); },
      {leaf({3, 4}, "s"), leaf({3, 4}), leaf({3, 4}, "", 0.5, 2)});
  add("lerp", "", [](const TensorList& v) { return lerp(v[0], v[1], 0.3); }, {leaf({3, 4}, "t"), leaf({3, 4})});
  add("cross_entropy", "smoothing, ignore_index", [](const TensorList& v) {
    return cross_entropy(v[0], tensor({2, 0, 1}), {.ignore_index = 1, .label_smoothing = 0.1});
  }, {leaf({3, 4}, "t")});
  add("cross_entropy", "sum, 3-d", [](const TensorList& v) {
    return cross_entropy(v[0], tensor({{1, 2}, {0, 0}}), {.reduction = Reduction::Sum});
  }, {leaf({2, 3, 2})});
  add("cat", "", [](const TensorList& v) { return cat({v[0], v[1]}, 1); }, {leaf({3, 2}, "t"), leaf({3, 4})});
  add("index_select", "repeats", [](const TensorList& v) { return index_select(v[0], 0, tensor({2, 0, 2})); }, {leaf({3, 4}, "s")});
  add("gather", "repeats", [](const TensorList& v) { return gather(v[0], 1, tensor({{0, 2, 2}, {1, 0, 3}, {3, 3, 0}})); },
      {leaf({3, 4}, "t")});
  // Distinct indices in each column: with repeats which src element lands is left open, as in PyTorch.
  add("scatter", "", [](const TensorList& v) { return scatter(v[0], 0, tensor({{0, 1, 2, 0}, {2, 0, 1, 1}}), v[1]); },
      {leaf({3, 4}), leaf({2, 4}, "t")});
  add("scatter_add", "repeats", [](const TensorList& v) { return scatter_add(v[0], 1, tensor({{0, 0, 3}, {1, 2, 1}}), v[1]); },
      {leaf({2, 4}, "s"), leaf({2, 3})});
  add("index_add", "", [](const TensorList& v) { return index_add(v[0], 0, tensor({1, 1}), v[1]); }, {leaf({3, 4}), leaf({2, 4}, "t")});
  add("index_add", "0-d self", [](const TensorList& v) { return index_add(v[0], 0, tensor({0, 0}), v[1]); }, {leaf({}), leaf({2})});
  // Fused backward kernels with a derivative of their own: reached as the gradient of a gradient.
  add("gelu_backward", "gelu's gradient", [](const TensorList& v) {
        AutoGradMode on(true);  // gradcheck's numeric side runs under no_grad
        return autograd::grad({(gelu(v[0]) * v[1]).sum()}, {v[0]}, {}, std::nullopt, /*create_graph=*/true)[0];
      }, {leaf({3, 4}, "t"), leaf({3, 4})});
  add("softmax_backward", "softmax's gradient", [](const TensorList& v) {
        AutoGradMode on(true);
        return autograd::grad({(softmax(v[0], 1) * v[1]).sum()}, {v[0]}, {}, std::nullopt, /*create_graph=*/true)[0];
      }, {leaf({3, 4}, "s"), leaf({3, 4})});
  // Advanced indexing: repeats, a mask, indexed dims apart, negative positions.
  const Tensor rows = tensor({2, 0, 2, -1}), cols = tensor({{1}, {3}});
  add("index", "repeats, apart", [=](const TensorList& v) { return v[0].index({rows, Slice(), cols}); }, {leaf({3, 2, 4}, "t")});
  add("index", "mask", [](const TensorList& v) { return v[0].index({Slice(), v[0].select(0, 0).detach() > 0}); }, {leaf({3, 4}, "s")});
  add("index_put", "repeats", [=](const TensorList& v) { return index_put(v[0], {rows}, v[1], true); }, {leaf({3, 4}, "t"), leaf({4, 1})});
  add("index_put", "overwrite", [](const TensorList& v) { return index_put(v[0], {Tensor(), tensor({0, 2})}, v[1]); },
      {leaf({3, 4}), leaf({2})});
  add("masked_select", "broadcast", [](const TensorList& v) { return masked_select(v[0], tensor({{true, false, true}, {false, false, true}})); },
      {leaf({3}, "s")});
  add("masked_scatter", "", [](const TensorList& v) { return masked_scatter(v[0], tensor({true, false, true}), v[1]); },
      {leaf({2, 3}, "t"), leaf({5})});
  add("take", "repeats", [=](const TensorList& v) { return take(v[0], rows); }, {leaf({2, 3}, "t")});
  add("addmm", "bias row, transposed weight", [](const TensorList& v) { return addmm(v[0], v[1], v[2].t()); },
      {leaf({3}), leaf({4, 5}), leaf({3, 5})});
  add("addmm", "full self, scaled", [](const TensorList& v) { return addmm(v[0], v[1], v[2], 0.5, 2.0); },
      {leaf({4, 3}), leaf({4, 5}, "t"), leaf({5, 3})});
  add("matmul", "batched broadcast", [](const TensorList& v) { return matmul(v[0], v[1]); }, {leaf({2, 3, 4}, "t"), leaf({4, 5})});
  add("matmul", "vector", [](const TensorList& v) { return matmul(v[0], v[1]); }, {leaf({4}), leaf({4, 3}, "s")});
  add("matmul", "batch against a transposed weight", [](const TensorList& v) { return matmul(v[0], v[1].t()); }, {leaf({2, 3, 4}), leaf({5, 4})});
  add("matmul", "matrix against a transposed weight", [](const TensorList& v) { return matmul(v[0], v[1]); }, {leaf({3, 4}, "s"), leaf({4, 5}, "t")});
  add("view", "", [](const TensorList& v) { return v[0].view({4, 3}) * 1; }, {leaf({3, 4})});
  add("permute", "", [](const TensorList& v) { return v[0].permute({2, 0, 1}) * 1; }, {leaf({2, 3, 4}, "t")});
  add("expand", "", [](const TensorList& v) { return v[0].expand({2, 3, 4}) * v[1]; }, {leaf({3, 1}), leaf({2, 3, 4})});
  add("slice", "", [](const TensorList& v) { return v[0].slice(1, 1, std::nullopt, 2) * 1; }, {leaf({3, 5}, "t")});
  // Overlapping windows over a stepped slice's storage (the odd elements are not the input's), and
  // windows over an expanded input, whose repeated elements share their gradient.
  add("as_strided", "overlapping", [](const TensorList& v) { return v[0].as_strided({4, 4}, {2, 2}, 0) * 1; }, {leaf({3, 4}, "s")});
  add("as_strided", "of an expanded input", [](const TensorList& v) { return v[0].expand({4, 3}).as_strided({2, 2}, {1, 1}) * 1; },
      {leaf({1, 3})});
  add("select", "", [](const TensorList& v) { return v[0].select(0, -1) * 1; }, {leaf({3, 4}, "s")});
  add("unsqueeze", "", [](const TensorList& v) { return v[0].unsqueeze(1) * 1; }, {leaf({3, 4})});
  add("squeeze", "", [](const TensorList& v) { return v[0].squeeze() * 1; }, {leaf({3, 1, 4})});
  // On a GPU machine the same case runs through the GPU in tests/cuda; here a forced copy on the CPU.
  add("_to_copy", "x.to(cpu, copy=true)", [](const TensorList& v) { return v[0].to(Device(kCPU), kFloat64, false, true) * v[1]; },
      {leaf({3, 4}, "t"), leaf({3, 4})});
  add("clone", "contiguous of a transposed leaf", [](const TensorList& v) { return v[0].contiguous() + v[0].clone(); }, {leaf({3, 4}, "t")});
  // Every registered unary op, from its own declaration (tally/ops/registry.h).
  for (const ops::UnaryOpInfo& u : ops::unary_ops()) {
    if (!u.differentiable) continue;
    // Values where the op is smooth: its domain's range (tally/ops/registry.h).
    const auto [lo, hi] = u.domain == "positive" ? std::pair{0.5, 2.0} : u.domain == "unit" ? std::pair{0.1, 0.9} : std::pair{-2.0, 2.0};
    add(std::string(u.name), "registry, transposed leaf", [fn = u.fn](const TensorList& v) { return fn(v[0]); },
        {leaf({3, 4}, "t", lo, hi)});
  }
  return c;
}

}  // namespace

TEST(Gradcheck, RegistryIsCovered) {
  const auto table = cases();
  std::set<std::string> covered;
  for (const auto& [op, c] : table) covered.insert(op);
  // Build a graph of every kind once so every registrar has run, then compare with the registry.
  // Ops whose backward is not the derivative of their forward by design, each tested elsewhere.
  const std::map<std::string, std::string> exempt = {
      {"fp8_linear", "straight-through: the recipe's FP8 products (tests/amp/test_fp8_linear.cpp checks them exactly)"}};
  for (const std::string& op : ops::differentiable_ops()) {
    if (exempt.contains(op)) continue;
    EXPECT_TRUE(covered.count(op)) << "differentiable op '" << op << "' has no gradcheck case: add one to tests/autograd/test_gradcheck.cpp";
  }
  EXPECT_GE(ops::differentiable_ops().size(), 30u);
}

TEST(Gradcheck, EveryDifferentiableOp) {
  for (const auto& [op, c] : cases()) {
    auto r = gradcheck(c.fn, c.inputs);
    EXPECT_TRUE(r.ok) << op << " (" << c.label << "): " << r.message;
  }
}

// Double backward (create_graph) of every differentiable op: the gradient of its gradient,
// against central differences of the first gradient. An op whose backward rule is not yet made
// of differentiable ops says so (NotImplementedError) rather than give a wrong second
// derivative; those are listed here with the reason, and a new op is not let in the list.
TEST(Gradcheck, SecondOrderEveryOp) {
  // Every differentiable op has a double backward: its backward's ops are differentiable, or,
  // where backward is one fused kernel (the norms, cross_entropy, attention), a recording
  // backward runs the composed rule instead.
  for (const auto& [op, c] : cases()) {
    try {
      auto r = autograd::gradgradcheck(c.fn, c.inputs);
      EXPECT_TRUE(r.ok) << op << " (" << c.label << "): " << r.message;
    } catch (const Error& e) {
      ADD_FAILURE() << op << " (" << c.label << "): " << e.what();
    }
  }
}

TEST(Gradcheck, DetectsAWrongGradient) {
  // A function whose gradient flows through detach() is wrong by construction: gradcheck must say so.
  auto r = gradcheck([](const TensorList& v) { return v[0] * v[0].detach(); }, {leaf({3})});
  EXPECT_FALSE(r.ok);
}
