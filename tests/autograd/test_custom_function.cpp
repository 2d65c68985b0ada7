// Custom autograd functions (tally/autograd/function.h) as libtorch's are written: forward and
// backward with a context, saved tensors and data, needs_input_grad, non-tensor arguments, one
// gradient per argument; checked by finite differences in float64, against the built-in ops, on
// the ledger under their name, and with PyTorch's errors.

#include <gtest/gtest.h>

#include "tally/tally.h"
#include "tests/expect_error.h"

namespace {

using namespace tally;
using autograd::AutogradContext;
using autograd::Function;
using tally::test::expect_error;

// y = scale · x³, with scale a plain number (a non-tensor argument: its gradient is undefined).
struct ScaledCube : Function<ScaledCube> {
  static Tensor forward(AutogradContext* ctx, const Tensor& x, double scale) {
    ctx->save_for_backward({x});
    ctx->saved_data["scale"] = scale;
    return x * x * x * scale;
  }
  static TensorList backward(AutogradContext* ctx, TensorList grads) {
    const Tensor x = ctx->get_saved_variables()[0];
    const double scale = std::any_cast<double>(ctx->saved_data["scale"]);
    return {grads[0] * x * x * (3 * scale), Tensor()};
  }
};

// x·w + b with a rule that computes only what needs_input_grad asks for.
struct Affine : Function<Affine> {
  static inline int computed = 0;  // gradients backward computed, across calls
  static Tensor forward(AutogradContext* ctx, const Tensor& x, const Tensor& w, const Tensor& b) {
    ctx->save_for_backward({x, w});
    return x.matmul(w) + b;
  }
  static TensorList backward(AutogradContext* ctx, TensorList grads) {
    const TensorList s = ctx->get_saved_variables();
    const Tensor& g = grads[0];
    TensorList out(3);
    if (ctx->needs_input_grad(0)) out[0] = g.matmul(s[1].t()), ++computed;
    if (ctx->needs_input_grad(1)) out[1] = s[0].t().matmul(g), ++computed;
    if (ctx->needs_input_grad(2)) out[2] = g.sum({0}), ++computed;
    return out;
  }
};

// exp that saves its own output, as torch's does: the output is kept without history.
struct MyExp : Function<MyExp> {
  static constexpr const char* name = "MyExp";
  static Tensor forward(AutogradContext* ctx, const Tensor& x) {
    Tensor y = x.exp();
    ctx->save_for_backward({y});
    return y;
  }
  static TensorList backward(AutogradContext* ctx, TensorList grads) { return {grads[0] * ctx->get_saved_variables()[0]}; }
};

struct WrongCount : Function<WrongCount> {
  static Tensor forward(AutogradContext*, const Tensor& x, const Tensor& y) { return x * y; }
  static TensorList backward(AutogradContext*, TensorList grads) { return {grads[0]}; }
};

struct WrongShape : Function<WrongShape> {
  static Tensor forward(AutogradContext*, const Tensor& x) { return x.sum(); }
  static TensorList backward(AutogradContext*, TensorList grads) { return {grads[0].reshape({1})}; }
};

// The largest value and its index: the index is marked non-differentiable.
struct MaxWithIndex : Function<MaxWithIndex> {
  static TensorList forward(AutogradContext* ctx, const Tensor& x) {
    auto [value, index] = x.max(0);
    ctx->mark_non_differentiable({index});
    ctx->save_for_backward({index});
    ctx->saved_data["n"] = x.size(0);
    return {value, index};
  }
  static TensorList backward(AutogradContext* ctx, TensorList grads) {
    const Tensor index = ctx->get_saved_variables()[0];
    const int64_t n = std::any_cast<int64_t>(ctx->saved_data["n"]);
    return {zeros({n}, grads[0].dtype()).scatter(0, index.reshape({1}), grads[0].reshape({1}))};
  }
};

TEST(CustomFunction, GradientsMatchFiniteDifferencesInFloat64) {
  Generator g(1);
  const Tensor x = randn({3, 4}, kFloat64, &g).requires_grad_();
  const auto cube = autograd::gradcheck([](const TensorList& in) { return ScaledCube::apply(in[0], 0.5); }, {x});
  EXPECT_TRUE(cube.ok) << cube.message;
  const Tensor w = randn({4, 2}, kFloat64, &g).requires_grad_(), b = randn({2}, kFloat64, &g).requires_grad_();
  const auto affine = autograd::gradcheck([](const TensorList& in) { return Affine::apply(in[0], in[1], in[2]); }, {x, w, b});
  EXPECT_TRUE(affine.ok) << affine.message;
  const auto exp = autograd::gradcheck([](const TensorList& in) { return MyExp::apply(in[0]); }, {x});
  EXPECT_TRUE(exp.ok) << exp.message;
}

TEST(CustomFunction, EqualsTheBuiltInOpsInsideALargerGraph) {
  Generator g(2);
  const Tensor x = randn({5, 3}, kFloat32, &g).requires_grad_();
  const Tensor y = MyExp::apply(x * 2).sin().sum();
  EXPECT_EQ(MyExp::apply(x).grad_fn()->name(), "MyExpBackward");
  y.backward();
  const Tensor x2 = x.detach().clone().requires_grad_();
  (x2 * 2).exp().sin().sum().backward();
  EXPECT_TRUE(allclose(x.grad(), x2.grad(), 1e-6, 1e-6));
}

TEST(CustomFunction, NeedsInputGradAndNoGraphWithoutOne) {
  const Tensor x = ones({2, 3}).requires_grad_(), w = ones({3, 2}), b = zeros({2});
  Affine::computed = 0;
  Affine::apply(x, w, b).sum().backward();
  EXPECT_EQ(Affine::computed, 1) << "only x needed a gradient";
  EXPECT_TRUE(x.grad().equal(full({2, 3}, 2.0f)));
  const Tensor plain = Affine::apply(ones({2, 3}), w, b);
  EXPECT_FALSE(plain.requires_grad());
  {
    NoGradGuard no_grad;
    EXPECT_FALSE(Affine::apply(x, w, b).requires_grad());
  }
}

TEST(CustomFunction, ANonDifferentiableOutputAndSavedData) {
  const Tensor x = tensor({1.0f, 5.0f, 2.0f}).requires_grad_();
  const TensorList out = MaxWithIndex::apply(x);
  EXPECT_TRUE(out[0].requires_grad());
  EXPECT_FALSE(out[1].requires_grad());
  (out[0] * 3).backward();
  EXPECT_TRUE(x.grad().equal(tensor({0.0f, 3.0f, 0.0f})));
}

TEST(CustomFunction, OnTheLedgerUnderItsName) {
  const Tensor x = ones({8, 8}).requires_grad_();
  accounting::FlopCounter counter;
  ScaledCube::apply(x, 2.0).sum().backward();
  bool forward = false, backward = false;
  for (const auto& [key, totals] : counter.by_module()) {
    if (key.first != "ScaledCube") continue;
    forward |= key.second == accounting::Phase::Forward && totals.flops > 0;
    backward |= key.second == accounting::Phase::Backward && totals.flops > 0;
  }
  EXPECT_TRUE(forward && backward) << "the function's ops are filed under its name in both phases";
}

TEST(CustomFunction, ErrorsAsPyTorchGivesThem) {
  const Tensor x = ones({3}).requires_grad_(), y = ones({3}).requires_grad_();
  expect_error<ValueError>([&] { WrongCount::apply(x, y).sum().backward(); },
                           {"function WrongCountBackward returned an incorrect number of gradients (expected 2, got 1)"});
  expect_error<ValueError>([&] { WrongShape::apply(x).backward(); },
                           {"function WrongShapeBackward returned an invalid gradient at index 0 - got [1] but expected shape compatible with [3]"});
  // A saved input changed in place before backward.
  const Tensor a = ones({3}).requires_grad_();
  Tensor h = a * 1;
  const Tensor cubed = ScaledCube::apply(h, 1.0);
  {
    NoGradGuard no_grad;
    h.add_(1);
  }
  expect_error<ValueError>([&] { cubed.sum().backward(); },
                           {"modified by an inplace operation", "saved tensor 0 of ScaledCubeBackward"});
  // A second backward without retain_graph.
  const Tensor e = MyExp::apply(x).sum();
  e.backward();
  expect_error<ValueError>([&] { e.backward(); }, {"backward through the graph a second time"});
}

}  // namespace

namespace {

/// Doubles x in a loop over its elements, which no op sees, and declares what that costs in
/// both phases (Note [Declared cost] in autograd/function.h).
struct RawDouble : autograd::Function<RawDouble> {
  static Tensor forward(autograd::AutogradContext*, const Tensor& x) {
    const Tensor in = x.contiguous();
    Tensor out = empty_like(in);
    const float* src = in.data_ptr<float>();
    float* dst = out.data_ptr<float>();
    for (int64_t i = 0; i < in.numel(); ++i) dst[i] = 2 * src[i];
    return out;
  }
  static TensorList backward(autograd::AutogradContext*, TensorList grads) { return {grads[0] * 2}; }
  static ops::Cost cost(const Tensor& x) { return {.flops = x.numel(), .bytes_read = x.nbytes(), .bytes_written = x.nbytes()}; }
  static ops::Cost backward_cost(autograd::AutogradContext*, const TensorList& grads) {
    return {.flops = grads[0].numel(), .bytes_read = grads[0].nbytes(), .bytes_written = grads[0].nbytes()};
  }
};

TEST(CustomFunction, ADeclaredCostIsItsRowOnTheLedger) {
  const Tensor x = ones({8, 8}).requires_grad_();
  accounting::FlopCounter counter;
  const Tensor y = RawDouble::apply(x);
  y.sum().backward();
  const accounting::OpTotals fwd = counter.op("RawDouble", accounting::Phase::Forward);
  EXPECT_EQ(fwd.calls, 1);
  EXPECT_EQ(fwd.flops, 64);
  EXPECT_EQ(fwd.bytes_read, 256);
  EXPECT_EQ(fwd.bytes_written, 256);
  EXPECT_GE(fwd.seconds, 0.0);
  const accounting::OpTotals bwd = counter.op("RawDoubleBackward", accounting::Phase::Backward);
  EXPECT_EQ(bwd.calls, 1);
  EXPECT_EQ(bwd.flops, 64);
  // The ops inside a phase with a declared cost are not counted again: backward's `grads[0] * 2`
  // and forward's contiguous() and empty_like are off the ledger.
  EXPECT_EQ(counter.op("mul", accounting::Phase::Backward).calls, 0);
  EXPECT_EQ(counter.total_flops(accounting::Phase::Forward), 64 + counter.op("sum", accounting::Phase::Forward).flops) << counter.table();
  EXPECT_TRUE(x.grad().equal(full({8, 8}, 2.0f)));
}

}  // namespace
