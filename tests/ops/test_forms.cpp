// The forms one op definition gives (Note [Forms] in ops/apply.h), the activations autograd keeps
// (Note [Activations] in core/storage.h) and the autocast hook (Note [Autocast]).

#include <gtest/gtest.h>

#include "tally/ops/apply.h"
#include "tally/tally.h"
#include "expect_error.h"

using namespace tally;

namespace {

using ::tally::test::message_of;

int64_t live(MemoryCategory c) { return CpuAllocator::get().stats().allocated_bytes[static_cast<size_t>(c)]; }

}  // namespace

TEST(Forms, InPlaceRefusesWhatPytorchRefuses) {
  Tensor i = ones({3}, kInt64);
  EXPECT_THROW(i.sqrt_(), TypeError);
  EXPECT_EQ(message_of([&] { i.sqrt_(); }), "result type float32 can't be cast to the desired output type int64");
  Tensor row = ones({3});
  EXPECT_THROW(row.add_(ones({2, 3})), ValueError);
  EXPECT_EQ(message_of([&] { row.add_(ones({2, 3})); }), "output with shape [3] doesn't match the broadcast shape [2, 3]");
  Tensor b = ones({3}, kBool);
  EXPECT_THROW(b.add_(ones({3}, kInt32)), TypeError);
  // The refused op wrote nothing.
  EXPECT_TRUE(i.equal(ones({3}, kInt64)));
  EXPECT_EQ(i._version(), 0);
}

TEST(Forms, OutIsWrittenResizedOrRefused) {
  Tensor a = arange(6, kFloat32).view({2, 3}), b = full({3}, 2.0);
  Tensor out = empty({2, 3});
  Tensor& r = mul_out(out, a, b);
  EXPECT_TRUE(r.is_same(out));
  EXPECT_TRUE(out.equal(a * b));
  EXPECT_EQ(out._version(), 1);
  Tensor small = zeros({1});
  matmul_out(small, a, a.t());  // resized to [2, 2]
  EXPECT_EQ(small.sizes(), IntArrayRef({2, 2}));
  EXPECT_TRUE(small.allclose(matmul(a, a.t())));
  Tensor ints = zeros({2, 3}, kInt64);
  EXPECT_EQ(message_of([&] { div_out(ints, a, b); }), "result type float32 can't be cast to the desired output type int64");
  // A float64 result rounds into a float32 out, through a strided view.
  Tensor base = zeros({3, 2});
  Tensor view = base.t();
  add_out(view, a, full({2, 3}, 0.5, kFloat64));
  EXPECT_TRUE(base.t().equal(a + 0.5));
  Tensor w = ones({3}).requires_grad_();
  EXPECT_THROW(mul_out(out, a, w), NotImplementedError);
}

TEST(Forms, InputsOverlappingTheOutputAreReadBeforeWritten) {
  Tensor x = arange(6, kFloat32);
  Tensor expect = x.narrow(0, 0, 5) + x.narrow(0, 1, 5);
  Tensor head = x.narrow(0, 0, 5);
  head.add_(x.narrow(0, 1, 5));  // each element reads its right neighbour, which is written too
  EXPECT_TRUE(head.equal(expect));
  Tensor m = arange(4, kFloat32).view({2, 2});
  Tensor expect_mm = matmul(m, m);
  matmul_out(m, m, m);  // not elementwise: through a temporary
  EXPECT_TRUE(m.equal(expect_mm));
}

TEST(Forms, OptimizerStepsInPlace) {
  // One AdamW-style update, written with the in-place ops an optimizer uses, against the
  // functional ops.
  Generator g(3);
  Tensor p = randn({4, 5}, {}, &g), grad = randn({4, 5}, {}, &g), m = zeros({4, 5}), v = zeros({4, 5});
  Tensor p0 = p.clone();
  m.lerp_(grad, 0.1);
  v.mul_(0.999).addcmul_(grad, grad, 0.001);
  Tensor denom = v.sqrt().add_(1e-8);
  p.mul_(1 - 1e-3 * 0.01).addcdiv_(m, denom, -1e-3);
  Tensor m_ref = grad * 0.1, v_ref = grad * grad * 0.001;
  Tensor p_ref = p0 * (1 - 1e-3 * 0.01) - 1e-3 * m_ref / (v_ref.sqrt() + 1e-8);
  EXPECT_TRUE(m.allclose(m_ref));
  EXPECT_TRUE(v.allclose(v_ref));
  EXPECT_TRUE(p.allclose(p_ref, 1e-5, 1e-6));
  Tensor c = randn({3}, {}, &g);
  c.clamp_(-0.1, 0.1);
  EXPECT_LE(c.abs().max().item<float>(), 0.1f);
  c.zero_();
  EXPECT_TRUE(c.equal(zeros({3})));
}

TEST(Activations, TheTrackerCountsWhatTheGraphKeepsByteForByte) {
  // A 2-layer MLP: every tensor a node keeps for backward is an activation, and a node keeps only
  // what its rule reads (Note [Saved tensors]); parameters stay parameters; after backward the
  // graph is released and nothing is an activation any more.
  Generator g(11);
  Tensor w1 = randn({16, 32}, {}, &g).requires_grad_(), w2 = randn({32, 4}, {}, &g).requires_grad_();
  accounting::set_memory_category(w1, MemoryCategory::Parameters);
  accounting::set_memory_category(w2, MemoryCategory::Parameters);
  const int64_t before = live(MemoryCategory::Activations);
  Tensor x = randn({8, 16}, {}, &g);
  Tensor h = matmul(x, w1);  // keeps x (for w1's gradient); x needs none, so w1 is not kept
  Tensor a = relu(h);        // keeps its output a (as torch's rule reads it), not h
  Tensor y = matmul(a, w2);  // keeps a too (one storage, counted once) and w2 (a parameter: not an activation)
  Tensor loss = y.sum();     // keeps nothing: the gradient of a sum is placed by shape
  const int64_t by_hand = x.nbytes() + a.nbytes();
  EXPECT_EQ(by_hand, 8 * 16 * 4 + 8 * 32 * 4);
  EXPECT_EQ(live(MemoryCategory::Activations) - before, by_hand);
  EXPECT_EQ(w1.storage()->category(), MemoryCategory::Parameters);
  loss.backward();
  EXPECT_EQ(live(MemoryCategory::Activations), before);
  EXPECT_EQ(x.storage()->category(), MemoryCategory::Other);
}

TEST(Activations, ADroppedGraphLetsGoToo) {
  const int64_t before = live(MemoryCategory::Activations);
  {
    Tensor w = ones({64}).requires_grad_();
    Tensor y = (w * 3).exp();
    EXPECT_GT(live(MemoryCategory::Activations), before);
  }
  EXPECT_EQ(live(MemoryCategory::Activations), before);
}

namespace {
/// Casts matmul's inputs to bfloat16, as an amp policy would; counts what it is asked.
struct MatmulInBf16 : ops::AutocastHook {
  std::vector<std::string> asked;
  std::optional<Dtype> input_dtype(std::string_view op, std::span<const Tensor* const>) override {
    asked.emplace_back(op);
    return op == "matmul" ? std::optional<Dtype>(kBFloat16) : std::nullopt;
  }
};
}  // namespace

TEST(Autocast, AHookChangesAnOpsInputDtypesBeforeItRuns) {
  MatmulInBf16 hook;
  ops::AutocastHook* previous = ops::set_autocast_hook(&hook);
  Tensor w = full({4, 3}, 0.5).requires_grad_();
  Tensor x = ones({2, 4});
  Tensor y = matmul(x, w);
  Tensor s = y.to(kFloat32).sum();
  ops::set_autocast_hook(previous);
  EXPECT_EQ(y.dtype(), kBFloat16);
  EXPECT_TRUE(y.to(kFloat32).equal(full({2, 3}, 2.0)));
  s.backward();
  ASSERT_TRUE(w.grad().defined());
  EXPECT_EQ(w.grad().dtype(), kFloat32);  // the cast is recorded: the gradient comes back in w's dtype
  EXPECT_TRUE(w.grad().equal(full({4, 3}, 2.0)));
  // Asked once per top-level op the user called; the casts it caused were not asked about.
  EXPECT_EQ(hook.asked, (std::vector<std::string>{"matmul", "_to_copy", "sum"}));
}

TEST(Foreach, OneLedgerRowForTheWholeList) {
  TensorList params = {ones({4, 5}), ones({3}), ones({2, 2, 2})};
  TensorList grads = {full({4, 5}, 2.0), full({3}, 2.0), full({2, 2, 2}, 2.0)};
  accounting::FlopCounter counter;
  _foreach_addcmul_(params, grads, grads, 0.5);  // 1 + 0.5·2·2 = 3
  _foreach_mul_(params, 2.0);
  EXPECT_EQ(counter.by_op().size(), 2u);
  const int64_t elements = 20 + 3 + 8;
  EXPECT_EQ(counter.op("_foreach_addcmul_", accounting::Phase::Forward).flops, 3 * elements);
  EXPECT_EQ(counter.op("_foreach_addcmul_", accounting::Phase::Forward).calls, 1);
  EXPECT_EQ(counter.op("_foreach_mul_", accounting::Phase::Forward).flops, elements);
  for (const Tensor& p : params) EXPECT_TRUE(p.equal(full(p.sizes(), 6.0)));
  TensorList short_list = {ones({1})};
  EXPECT_EQ(message_of([&] { _foreach_add_(params, short_list); }),
            "_foreach_add_: Tensor lists must have the same number of tensors, got 3 and 1");
}
