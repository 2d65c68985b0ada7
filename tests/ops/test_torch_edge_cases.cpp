// Edge cases where tally once differed from PyTorch: each expected value is what torch 1.13 gives
// for the same call (written next to it), so these fail if tally drifts from it again.

#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <string>
#include <vector>

#include "tally/tally.h"
#include "tests/elements.h"
#include "tests/expect_error.h"

using namespace tally;
using tally::test::expect_error;

namespace {

constexpr double kInf = std::numeric_limits<double>::infinity();

std::vector<double> values(const Tensor& t) { return tally::test::elements<double>(t); }

}  // namespace

TEST(TorchEdgeCases, CrossEntropyWithAMaskedOutClassIsFinite) {
  // F.cross_entropy([[0, -inf, 1]], [2]) = 0.31326...; with the class masked out of the target's
  // row it is still finite, and the masked class gets no gradient.
  Tensor x = tensor({{0.0, -kInf, 1.0}, {2.0, -kInf, -kInf}}).requires_grad_();
  Tensor loss = cross_entropy(x, tensor({2, 0}), {.reduction = Reduction::None});
  EXPECT_NEAR(values(loss)[0], 0.31326165795326233, 1e-6);
  EXPECT_EQ(values(loss)[1], 0.0);
  loss.sum().backward();
  const std::vector<double> g = values(x.grad());
  const std::vector<double> want = {0.2689414, 0, -0.2689414, 0, 0, 0};
  for (size_t i = 0; i < want.size(); ++i) EXPECT_NEAR(g[i], want[i], 1e-6) << i;
  // With label smoothing the -inf logit is in the smoothed target: torch gives inf.
  EXPECT_EQ(cross_entropy(tensor({{0.0, -kInf, 1.0}}), tensor({2}), {.label_smoothing = 0.1}).item<double>(), kInf);
}

TEST(TorchEdgeCases, CastToAnIntegerDropsTheGraph) {
  // torch: w.to(torch.int64).requires_grad is False, and backward from it raises.
  Tensor w = ones({3}).requires_grad_();
  Tensor i = w.to(kInt64);
  EXPECT_FALSE(i.requires_grad());
  EXPECT_FALSE((w > 0).requires_grad());
  EXPECT_THROW((i.to(kFloat32) * 3).sum().backward(), Error);
  // A floating cast keeps it.
  EXPECT_TRUE(w.to(kFloat64).requires_grad());
}

TEST(TorchEdgeCases, ProductsOfWidthZeroHaveGradients) {
  // torch: matmul(ones(3, 2), w[2, 0]).sum().backward() gives w.grad of shape [2, 0].
  Tensor w = zeros({2, 0}).requires_grad_();
  matmul(ones({3, 2}), w).sum().backward();
  EXPECT_EQ(w.grad().sizes(), IntArrayRef({2, 0}));
  Tensor v = zeros({2, 0}).requires_grad_();
  matmul(ones({4, 3, 2}), v).backward(zeros({4, 3, 0}));
  EXPECT_EQ(v.grad().sizes(), IntArrayRef({2, 0}));
  // A linear layer with no input features is its bias; and triu of an empty batch is empty.
  Tensor b = tensor({1.0, 2.0});
  EXPECT_EQ(values(nn::functional::linear(ones({3, 5, 0}), zeros({2, 0}), b)), values(b.expand({3, 5, 2})));
  EXPECT_EQ(triu(zeros({0, 3})).sizes(), IntArrayRef({0, 3}));
}

TEST(TorchEdgeCases, SumTakesTheDtypeItIsGiven) {
  // torch.sum(int32 [1, 2, 3], dtype=int32) is int32 6; uint8 200 + 200 in uint8 wraps to 144.
  Tensor s = sum(tensor({1, 2, 3}).to(kInt32), kInt32);
  EXPECT_EQ(s.dtype(), kInt32);
  EXPECT_EQ(s.item<int64_t>(), 6);
  Tensor u = sum(full({2}, 200, kUInt8), kUInt8);
  EXPECT_EQ(u.dtype(), kUInt8);
  EXPECT_EQ(u.item<int64_t>(), 144);
  Tensor cols = sum(tensor({{1, 2}, {3, 4}}).to(kUInt8), {0}, false, kUInt8);
  EXPECT_EQ(cols.dtype(), kUInt8);
  EXPECT_EQ(values(cols), (std::vector<double>{4, 6}));
  EXPECT_EQ(sum(tensor({true, true}), kBool).item<bool>(), true);
  EXPECT_EQ(sum(tensor({1, 2})).dtype(), kInt64);  // without a dtype, integers sum to int64
}

TEST(TorchEdgeCases, PowGradientsAtZero) {
  // torch: zeros(3).pow(e).sum().backward() with e = [0, 2, -1] gives e.grad = [0, 0, -inf].
  Tensor e = tensor({0.0, 2.0, -1.0}).requires_grad_();
  zeros({3}).pow(e).sum().backward();
  EXPECT_EQ(values(e.grad()), (std::vector<double>{0, 0, -kInf}));
  // w.pow(w) at w = [0, 2]: grad [0, 6.7726].
  Tensor w = tensor({0.0, 2.0}).requires_grad_();
  w.pow(w).sum().backward();
  EXPECT_EQ(values(w.grad())[0], 0.0);
  EXPECT_NEAR(values(w.grad())[1], 6.7725887, 1e-5);
  // a = [0, 0, 1.5], b = [0, -1, 2]: a.grad [0, -inf, 3], b.grad [0, -inf, 0.9123].
  Tensor a = tensor({0.0, 0.0, 1.5}).requires_grad_(), b = tensor({0.0, -1.0, 2.0}).requires_grad_();
  a.pow(b).sum().backward();
  EXPECT_EQ(values(a.grad()), (std::vector<double>{0, -kInf, 3}));
  EXPECT_EQ(values(b.grad())[0], 0.0);
  EXPECT_EQ(values(b.grad())[1], -kInf);
  EXPECT_NEAR(values(b.grad())[2], 0.9122964, 1e-5);
}

TEST(TorchEdgeCases, MaxOverADimSendsTheGradientToTheReturnedIndex) {
  // torch.max(w, 1)[0].sum().backward(): [[0, 1, 0], [1, 0, 0]]; min: [[1, 0, 0], [0, 0, 1]];
  // amax splits among ties: [[0, 0.5, 0.5]].
  Tensor w = tensor({{1.0, 3.0, 3.0}, {2.0, 2.0, 0.0}}).requires_grad_();
  std::get<0>(w.max(1)).sum().backward();
  EXPECT_EQ(values(w.grad()), (std::vector<double>{0, 1, 0, 1, 0, 0}));
  Tensor v = tensor({{1.0, 3.0, 3.0}, {2.0, 2.0, 0.0}}).requires_grad_();
  std::get<0>(v.min(1)).sum().backward();
  EXPECT_EQ(values(v.grad()), (std::vector<double>{1, 0, 0, 0, 0, 1}));
  Tensor a = tensor({{1.0, 3.0, 3.0}}).requires_grad_();
  a.amax({1}).sum().backward();
  EXPECT_EQ(values(a.grad()), (std::vector<double>{0, 0.5, 0.5}));
}

TEST(TorchEdgeCases, ArgmaxWithKeepdimAndNoDimKeepsEveryDim) {
  // torch.zeros(2, 3).argmax(keepdim=True).shape is [1, 1]; argmin of [[1, 5, 2], [7, 0, 1]] is [[4]].
  EXPECT_EQ(zeros({2, 3}).argmax(std::nullopt, true).sizes(), IntArrayRef({1, 1}));
  Tensor m = tensor({{1.0, 5.0, 2.0}, {7.0, 0.0, 1.0}}).argmin(std::nullopt, true);
  EXPECT_EQ(m.sizes(), IntArrayRef({1, 1}));
  EXPECT_EQ(m.item<int64_t>(), 4);
}

TEST(TorchEdgeCases, ReductionsOverAnEmptyDimNameIt) {
  // torch: "max(): Expected reduction dim 1 to have non-zero size." (amax, argmax likewise).
  expect_error<IndexError>([] { zeros({3, 0}).max(1); }, {"max(): Expected reduction dim 1 to have non-zero size"});
  expect_error<IndexError>([] { zeros({3, 0}).amax({-1}); }, {"amax(): Expected reduction dim 1 to have non-zero size"});
  expect_error<IndexError>([] { zeros({3, 0}).argmax(1); }, {"argmax(): Expected reduction dim 1 to have non-zero size"});
  expect_error<IndexError>([] { zeros({3, 0}).argmax(); }, {"argmax(): Expected reduction dim to be specified"});
  expect_error<IndexError>([] { zeros({3, 0}).amax(); }, {"amax(): Expected reduction dim to be specified"});
  EXPECT_EQ(zeros({0, 3}).amax({1}).sizes(), IntArrayRef({0}));  // nothing to pick from, nothing asked
}

TEST(TorchEdgeCases, AllcloseTellsInfinitiesApart) {
  // torch.allclose: [1] vs [inf] False, [inf] vs [inf] True, [-inf] vs [inf] False.
  EXPECT_FALSE(allclose(tensor({1.0}), tensor({kInf})));
  EXPECT_FALSE(allclose(tensor({kInf}), tensor({1.0})));
  EXPECT_TRUE(allclose(tensor({kInf}), tensor({kInf})));
  EXPECT_FALSE(allclose(tensor({-kInf}), tensor({kInf})));
}

TEST(TorchEdgeCases, ClampWithANanBound) {
  // torch 1.13: x.clamp(nan, 2) and x.clamp(1, nan) are all NaN; a lone NaN bound leaves x.
  const double nan = std::numeric_limits<double>::quiet_NaN();
  Tensor x = tensor({1.0, 5.0});
  for (const Tensor& t : {x.clamp(nan, 2.0), x.clamp(1.0, nan)})
    for (double v : values(t)) EXPECT_TRUE(std::isnan(v));
  EXPECT_EQ(values(x.clamp(nan)), (std::vector<double>{1, 5}));
  EXPECT_EQ(values(x.clamp(std::nullopt, nan)), (std::vector<double>{1, 5}));
}

TEST(TorchEdgeCases, NegativeIndicesAreOutOfRangeForIndexSelectAndEmbedding) {
  // torch: IndexError "index out of range in self" for index_select, embedding and index_add.
  Tensor w = arange(6.0).view({3, 2});
  expect_error<IndexError>([&] { index_select(w, 0, tensor({-1})); }, {"index -1 is out of bounds"});
  expect_error<IndexError>([&] { embedding(w, tensor({-1})); }, {"index -1 is out of bounds"});
  expect_error<IndexError>([&] { index_add(zeros({3}), 0, tensor({-1}), ones({1})); }, {"index -1 is out of bounds"});
  EXPECT_EQ(values(index_select(w, 0, tensor({2}))), (std::vector<double>{4, 5}));
}

TEST(TorchEdgeCases, CatSkipsTheLegacyEmptyTensor) {
  // torch.cat([torch.tensor([]), ones(2, 3)]) is ones(2, 3): a 1-D tensor of size 0 is left out,
  // in any dim; its dtype still counts (float64 here); a gradient for it is empty.
  Tensor e = zeros({0}, kFloat64).requires_grad_();
  Tensor a = ones({2, 3}).requires_grad_();
  Tensor c = cat({e, a}, 0);
  EXPECT_EQ(c.sizes(), IntArrayRef({2, 3}));
  EXPECT_EQ(c.dtype(), kFloat64);
  EXPECT_EQ(cat({a, zeros({0})}, -1).sizes(), IntArrayRef({2, 3}));
  EXPECT_EQ(cat({zeros({0}), zeros({0})}).sizes(), IntArrayRef({0}));
  c.sum().backward();
  EXPECT_EQ(e.grad().sizes(), IntArrayRef({0}));
  EXPECT_EQ(values(a.grad()), std::vector<double>(6, 1.0));
  expect_error<ValueError>([] { cat({zeros({0}), tensor(1.0)}); }, {"zero-dimensional tensor (at position 1) cannot be concatenated"});
  expect_error<ValueError>([] { cat({ones({2, 3}), ones({3})}); }, {"Tensors must have same number of dimensions: got 2 and 1"});
}

TEST(TorchEdgeCases, NumbersOutsideADtypesRangeAreRefusedWhenWritten) {
  // torch: "value cannot be converted to type uint8_t without overflow" for full, fill_, clamp and
  // masked_fill; uint8 takes -1 (as 255); a float type keeps inf and NaN; arithmetic wraps.
  expect_error<ValueError>([] { full({2}, 300, kUInt8); }, {"value 300 cannot be converted to type uint8 without overflow"});
  expect_error<ValueError>([] { zeros({2}, kInt32).fill_(int64_t{1} << 40); }, {"without overflow"});
  expect_error<ValueError>([] { full({1}, 1e6, kFloat16); }, {"value 1e+06 cannot be converted to type float16"});
  expect_error<ValueError>([] { zeros({1}).fill_(1e39); }, {"without overflow"});
  expect_error<ValueError>([] { zeros({2}, kFloat16).masked_fill(tensor({true, false}), 1e6); }, {"masked_fill"});
  expect_error<ValueError>([] { tensor({250, 5, 0}).to(kUInt8).clamp(-1, 300); }, {"clamp: value 300"});
  expect_error<ValueError>([] { zeros({2}, kUInt8).fill_(2.5e3); }, {"without overflow"});
  expect_error<ValueError>([] { zeros({2}, kInt64).fill_(std::nan("")); }, {"without overflow"});
  EXPECT_EQ(values(zeros({2}, kUInt8).fill_(-1)), (std::vector<double>{255, 255}));
  EXPECT_EQ(values(full({2}, kInf, kFloat16))[0], kInf);
  EXPECT_TRUE(std::isnan(values(full({1}, std::nan(""), kBFloat16))[0]));
  EXPECT_EQ(values(zeros({2}, kBool).fill_(2)), (std::vector<double>{1, 1}));
  EXPECT_EQ(values(tensor({250, 5, 0}).to(kUInt8) + 300), (std::vector<double>{38, 49, 44}));
  EXPECT_EQ(values(zeros({2}, kFloat16) + 1e6)[0], kInf);
  // On the meta device too: a program checked there fails the same way.
  expect_error<ValueError>([] { full({2}, 300, TensorOptions(kUInt8).device(kMeta)); }, {"without overflow"});
}

TEST(TorchEdgeCases, ABoolAlphaOnlyForABoolResult) {
  // torch: ones(1).add(ones(1), alpha=True) raises "Boolean alpha only supported for Boolean results."
  expect_error<TypeError>([] { ones({1}).add(ones({1}), true); }, {"Boolean alpha only supported for Boolean results"});
  expect_error<TypeError>([] { sub(ones({1}), ones({1}), true); }, {"Boolean alpha only supported for Boolean results"});
  EXPECT_TRUE(tensor({true}).add(tensor({true}), false).item<bool>());
  expect_error<TypeError>([] { tensor({1}).add(tensor({1}), 0.5); }, {"argument alpha must not be a floating point number"});
}

TEST(TorchEdgeCases, Float16VarianceIsAccumulatedInFloat32) {
  // x = (torch.arange(1000) % 61 - 30).half(): x.var() is 312., x.view(2, 500).var(1) is
  // [317.5, 307.]; (torch.arange(70000) % 201 - 100).half().var() is 3368. Their sums of squares
  // pass float16's 65504, which gave inf and NaN.
  auto pattern = [](int64_t n, int64_t period) {
    Tensor v = empty({n}, kFloat32);
    float* p = v.data_ptr<float>();
    for (int64_t i = 0; i < n; ++i) p[i] = static_cast<float>(i % period - period / 2);
    return v.to(kFloat16);
  };
  const Tensor x = pattern(1000, 61);
  EXPECT_EQ(x.var().dtype(), kFloat16);
  EXPECT_EQ(x.var().item<double>(), 312.0);
  EXPECT_EQ(values(x.view({2, 500}).var({1})), (std::vector<double>{317.5, 307.0}));
  EXPECT_EQ(pattern(70000, 201).var().item<double>(), 3368.0);
}

TEST(TorchEdgeCases, MaxOfEveryElementSendsTheGradientToTheNans) {
  // torch: tensor([1, nan, 3]).max().backward() gives [0, 1, 0]; [1, nan, nan].min() gives
  // [0, 0.5, 0.5]; ties without NaN split as amax does ([1, 3, 3]: [0, 0.5, 0.5]). amax itself
  // gives NaN everywhere, as torch's.
  Tensor x = tensor({1.0, std::nan(""), 3.0}).requires_grad_();
  x.max().backward();
  EXPECT_EQ(values(x.grad()), (std::vector<double>{0, 1, 0}));
  Tensor y = tensor({1.0, std::nan(""), std::nan("")}).requires_grad_();
  y.min().backward();
  EXPECT_EQ(values(y.grad()), (std::vector<double>{0, 0.5, 0.5}));
  Tensor t = tensor({{1.0, 3.0, 3.0}}).requires_grad_();
  t.max().backward();
  EXPECT_EQ(values(t.grad()), (std::vector<double>{0, 0.5, 0.5}));
  Tensor a = tensor({1.0, std::nan(""), 3.0}).requires_grad_();
  a.amax().backward();
  for (double g : values(a.grad())) EXPECT_TRUE(std::isnan(g));
}

TEST(TorchEdgeCases, CrossEntropyWithAPositiveInfiniteLogitIsNan) {
  // F.cross_entropy([[0, -inf, 1], [inf, 1, 2]], [0, 1], reduction='none') is [1.3133, nan], as
  // log_softmax's second row is all NaN.
  const Tensor c = tensor({{0.0, -kInf, 1.0}, {kInf, 1.0, 2.0}});
  const std::vector<double> loss = values(cross_entropy(c, tensor({0, 1}), {.reduction = Reduction::None}));
  EXPECT_NEAR(loss[0], 1.3132616, 1e-6);
  EXPECT_TRUE(std::isnan(loss[1]));
  for (double v : values(log_softmax(c, 1).select(0, 1))) EXPECT_TRUE(std::isnan(v));
}

TEST(TorchEdgeCases, ShapeMessagesOfLossAndNorm) {
  // torch: "Expected target size [2, 4], got [2, 3]"; "Expected normalized_shape to be at least
  // 1-dimensional, i.e., containing at least one element, but got normalized_shape = []".
  expect_error<ValueError>([] { cross_entropy(zeros({2, 3, 4}), zeros({2, 3}, kInt64)); }, {"Expected target size [2, 4], got [2, 3]"});
  expect_error<ValueError>([] { layer_norm(zeros({6, 4}), {}); }, {"expected normalized_shape to be at least 1-dimensional"});
}

TEST(TorchEdgeCases, AsStridedHasAGradient) {
  // torch: x = arange(6.); (x.as_strided((2, 2), (1, 2)) * [[1, 2], [3, 4]]).sum().backward()
  // gives [1, 3, 2, 4, 0, 0]; overlapping windows x8.as_strided((4, 4), (1, 1)) weighted by
  // arange(16) / 2 + 1 accumulate: [1, 4.5, 10.5, 19, 18, 14.5, 8.5, 0]; over an expanded input,
  // e = ones(1, 3).expand(4, 3).as_strided((2,), (1,)) weighted [5, 7] gives e.grad [5, 7, 0].
  Tensor x = arange(6, kFloat64).requires_grad_();
  Tensor y = x.as_strided({2, 2}, {1, 2});
  EXPECT_TRUE(y.requires_grad());
  (y * tensor({{1.0, 2.0}, {3.0, 4.0}}, kFloat64)).sum().backward();
  EXPECT_EQ(values(x.grad()), (std::vector<double>{1, 3, 2, 4, 0, 0}));
  Tensor x8 = arange(8, kFloat64).requires_grad_();
  (x8.as_strided({4, 4}, {1, 1}, 0) * (arange(16, kFloat64).view({4, 4}) / 2 + 1)).sum().backward();
  EXPECT_EQ(values(x8.grad()), (std::vector<double>{1, 4.5, 10.5, 19, 18, 14.5, 8.5, 0}));
  Tensor e = ones({1, 3}, kFloat64).requires_grad_();
  (e.expand({4, 3}).as_strided({2}, {1}) * tensor({5.0, 7.0}, kFloat64)).sum().backward();
  EXPECT_EQ(values(e.grad()), (std::vector<double>{5, 7, 0}));
  // A view at an offset: b = arange(24.).view(2, 3, 4), v = b[:, 1:, ::2] (offset 4),
  // (v.as_strided((3, 3), (5, 2), 1) * arange(9.).view(3, 3)).sum().backward(): b.grad is 3 at
  // [0, 1, 2], 4 at [0, 2, 0], 5 at [0, 2, 2], 0 elsewhere (the windows' other elements are not v's).
  Tensor b = arange(24, kFloat64).view({2, 3, 4}).detach().requires_grad_();
  Tensor v = b.slice(1, 1).slice(2, 0, std::nullopt, 2);
  (v.as_strided({3, 3}, {5, 2}, 1) * arange(9, kFloat64).view({3, 3})).sum().backward();
  std::vector<double> want(24, 0.0);
  want[6] = 3;
  want[8] = 4;
  want[10] = 5;
  EXPECT_EQ(values(b.grad()), want);
}

TEST(TorchEdgeCases, IndexAddIntoAZeroDimTensor) {
  // torch.index_add(tensor(5.), 0, tensor([0, 0]), ones(2)) is tensor(7.); the source's gradient
  // (of a source s * 3) is [3, 3]; a wrong count of source elements raises.
  Tensor x = scalar_tensor(5.0).requires_grad_(), s = ones({2}).requires_grad_();
  Tensor y = index_add(x, 0, tensor({0, 0}), s * 3);
  EXPECT_EQ(y.dim(), 0);
  EXPECT_EQ(index_add(scalar_tensor(5.0), 0, tensor({0, 0}), ones({2})).item<double>(), 7.0);
  EXPECT_EQ(index_add(scalar_tensor(5.0), 0, tensor({0}), scalar_tensor(2.0)).item<double>(), 7.0);
  y.backward();
  EXPECT_EQ(x.grad().item<double>(), 1.0);
  EXPECT_EQ(values(s.grad()), (std::vector<double>{3, 3}));
  expect_error<ValueError>([] { index_add(scalar_tensor(5.0), 0, tensor({0, 0}), ones({3})); }, {"Number of indices (2)"});
  expect_error<IndexError>([] { index_add(scalar_tensor(5.0), 0, tensor({1}), ones({1})); }, {"index"});
}

TEST(TorchEdgeCases, MaskedFillBroadcastsTheInputWithTheMask) {
  // torch: arange(6.).view(2, 3).masked_fill(ones(4, 2, 3, dtype=bool).triu(), 0) has shape [4, 2, 3].
  const Tensor x = arange(6, kFloat32).view({2, 3});
  const Tensor filled = x.masked_fill(ones({4, 2, 3}, kBool).triu(), 0);
  EXPECT_EQ(filled.sizes(), IntArrayRef({4, 2, 3}));
  EXPECT_EQ(values(filled.select(0, 0)), (std::vector<double>{0, 0, 0, 3, 0, 0}));
  // triu of a 1-D tensor: torch's IndexError for the rows' dim.
  expect_error<IndexError>([] { tensor({1, 2, 3}).triu(); }, {"Dimension out of range (expected to be in range of [-1, 0], but got -2)"});
}

TEST(TorchEdgeCases, ProductsAtTheirEdges) {
  // torch: F.linear(ones(3, 0), ones(4, 0), ones(4)) in bfloat16 (and float16) is the bias, [3, 4]
  // of ones (tally's fused bias path raised an internal assert).
  for (Dtype d : {kBFloat16, kFloat16, kFloat32}) {
    const Tensor y = nn::F::linear(ones({3, 0}, d), ones({4, 0}, d), ones({4}, d));
    EXPECT_EQ(y.sizes(), IntArrayRef({3, 4}));
    EXPECT_EQ(values(y), std::vector<double>(12, 1.0)) << dtype_name(d);
  }
  // addmm with beta or alpha other than 1 runs addmm's checks: torch refuses a self that does not
  // broadcast to the product and mixed dtypes.
  expect_error<ValueError>([] { addmm(ones({5, 3, 2}), ones({3, 4}), ones({4, 2}), 0.5, 1); }, {"does not broadcast"});
  expect_error<TypeError>([] { addmm(ones({2}, kFloat64), ones({2, 3}), ones({3, 2}), 2, 1); }, {"same dtype"});
  // beta = 0 ignores self (a NaN included) but gives it a gradient of zeros, as torch's.
  Tensor self = full({3, 2}, std::nan(""), kFloat64).requires_grad_();
  Tensor y = addmm(self, ones({3, 4}, kFloat64), ones({4, 2}, kFloat64), 0, 1);
  EXPECT_EQ(values(y), std::vector<double>(6, 4.0));
  y.sum().backward();
  ASSERT_TRUE(self.grad().defined());
  EXPECT_EQ(values(self.grad()), std::vector<double>(6, 0.0));
  // torch.matmul(ones(2, 3), ones(3, 2), out=empty(0, dtype=float64)): "Expected out tensor to have
  // dtype float, but got double instead".
  expect_error<TypeError>([] {
    Tensor o = empty({0}, kFloat64);
    matmul_out(o, ones({2, 3}), ones({3, 2}));
  }, {"Expected out tensor to have dtype float32, but got float64 instead"});
  // F.linear(ones(3, 5), ones(5)) is a dot per row: [5, 5, 5].
  EXPECT_EQ(values(nn::F::linear(ones({3, 5}), ones({5}))), (std::vector<double>{5, 5, 5}));
}

TEST(TorchEdgeCases, AlphaScalesOtherInTheResultsDtype) {
  // torch.add(tensor([0]), tensor([200], dtype=uint8), alpha=2) is [400]; float32 [0.] plus a float16
  // 60000 with alpha 2 is [120000.]; plus a bfloat16 1 with alpha 0.1 is 0.1 in float32. An alpha
  // that does not fit the result dtype raises "value cannot be converted to type uint8_t without overflow".
  EXPECT_EQ(add(tensor({0}), tensor({200}, kUInt8), 2).item<int64_t>(), 400);
  EXPECT_EQ(sub(tensor({0}), tensor({2000000000}, kInt32), 3).item<int64_t>(), -6000000000);
  EXPECT_EQ(add(tensor({0.0}), tensor({60000.0}, kFloat16), 2).item<float>(), 120000.0f);
  EXPECT_EQ(add(tensor({0.0}), tensor({1.0}, kBFloat16), 0.1).item<float>(), 0.1f);
  expect_error<ValueError>([] { add(tensor({1}, kUInt8), tensor({1}, kUInt8), 300); }, {"cannot be converted to type uint8"});
}

TEST(TorchEdgeCases, IntegerTensorsToNegativeIntegerPowers) {
  // torch.pow(tensor([0, 1, -1, 2, -2, -1]), tensor([-1, -1, -1, -1, -1, -2])) is [0, 1, -1, 0, 0, 1];
  // uint8 [1, 2] to int64 [-1, -1] is [1, 0]. A negative number as the exponent is still refused,
  // and a number that does not fit the dtype raises.
  EXPECT_EQ(values(pow(tensor({0, 1, -1, 2, -2, -1}), tensor({-1, -1, -1, -1, -1, -2}))), (std::vector<double>{0, 1, -1, 0, 0, 1}));
  const Tensor u = pow(tensor({1, 2}, kUInt8), tensor({-1, -1}));
  EXPECT_EQ(u.dtype(), kInt64);
  EXPECT_EQ(values(u), (std::vector<double>{1, 0}));
  expect_error<ValueError>([] { pow(tensor({2}), -1); }, {"Integers to negative integer powers are not allowed."});
  expect_error<ValueError>([] { pow(tensor({1, 2}, kInt32), int64_t{100000000000}); }, {"cannot be converted to type"});
}

// A third audit's findings, each with torch 1.13's answer.
TEST(TorchEdgeCases, AbsOfMinusZeroIsPlusZero) {
  for (Dtype dt : {kFloat32, kFloat64}) {
    const Tensor one = abs(tensor({-0.0}, dt)), many = abs(full({1000}, -0.0, TensorOptions(dt)));
    EXPECT_FALSE(std::signbit(one.item<double>())) << dtype_name(dt);  // 1 / torch.abs(-0.) is inf
    EXPECT_FALSE(std::signbit(many.max().item<double>())) << dtype_name(dt);
    EXPECT_FALSE(std::signbit(many.min().item<double>())) << dtype_name(dt);
  }
}

TEST(TorchEdgeCases, AnIntegerTensorFromAListTakesOnlyNumbersItHolds) {
  expect_error<ValueError>([] { tensor({300}, kUInt8); }, {"value 300 cannot be converted to type uint8 without overflow"});
  expect_error<ValueError>([] { tensor({1e10}, kInt32); }, {"cannot be converted to type int32"});
  expect_error<ValueError>([] { tensor({std::nan("")}, kInt64); }, {"cannot be converted to type int64"});
  EXPECT_EQ(tensor({-1}, kUInt8).item<int64_t>(), 255);  // torch wraps a negative number into uint8
  EXPECT_TRUE(std::isinf(tensor({1e40}, kFloat32).item<float>()));
}

TEST(TorchEdgeCases, ItemRaisesForAValueItsTypeCannotHold) {
  expect_error<ValueError>([] { tensor({1e10}).item<int32_t>(); }, {"item: value", "cannot be converted to type int32 without overflow"});
  expect_error<ValueError>([] { tensor({INFINITY}).item<int64_t>(); }, {"cannot be converted to type int64"});
  expect_error<ValueError>([] { tensor({std::nan("")}).item<int64_t>(); }, {"cannot be converted to type int64"});
  EXPECT_EQ(tensor({2.7}).item<int64_t>(), 2);
  EXPECT_TRUE(std::isnan(tensor({std::nan("")}).item<float>()));
}

TEST(TorchEdgeCases, AllcloseBroadcastsBothSidesAndTellsLargeIntegersApart) {
  EXPECT_TRUE(allclose(tensor(1.0), tensor({1.0, 1.0})));  // a 0-d a raised
  EXPECT_FALSE(allclose(tensor({(int64_t{1} << 53) + 1}), tensor({int64_t{1} << 53}), 0.0, 0.0));
  expect_error<ValueError>([] { allclose(tensor({1.0}), tensor({1.0}), -1.0, 0.0); }, {"rtol must be greater than or equal to zero, but got -1"});
  expect_error<ValueError>([] { allclose(tensor({1.0}), tensor({1.0}), 0.0, -1.0); }, {"atol must be greater than or equal to zero"});
  EXPECT_TRUE(allclose(tensor({1.0, NAN}), tensor({1.0, NAN}), 1e-5, 1e-8, true));
}

// Shapes torch refuses and tally let through: expand to a negative size built a tensor of -6
// elements; narrow's bound overflowed for a length near 2^63; flatten and a reduction of a 0-d
// tensor ignored a dim out of range or given twice.
TEST(TorchEdgeCases, NegativeExpandsOverflowingNarrowsAndZeroDimDimsAreRefused) {
  expect_error<ValueError>([] { ones({3, 1}).expand({3, -2}); }, {"expanded size of the tensor (-2) at dimension 1 must be non-negative"});
  expect_error<ValueError>([] { ones({1}).expand({-5}); }, {"(-5)", "must be non-negative"});
  EXPECT_EQ(ones({3, 1}).expand({-1, 4}).sizes(), IntArrayRef({3, 4}));
  expect_error<ValueError>([] { tensor({1.0, 2, 3, 4}).narrow(0, 2, std::numeric_limits<int64_t>::max()); },
                           {"start (2) + length (9223372036854775807) exceeds dimension size (4)."});
  EXPECT_EQ(tensor({1.0, 2, 3, 4}).narrow(0, 2, 2).sizes(), IntArrayRef({2}));
  expect_error<IndexError>([] { scalar_tensor(1.0).flatten(1); }, {"Dimension out of range (expected to be in range of [-1, 0], but got 1)"});
  expect_error<IndexError>([] { scalar_tensor(1.0).flatten(-2); }, {"but got -2"});
  EXPECT_EQ(scalar_tensor(1.0).flatten(-1, 0).sizes(), IntArrayRef({1}));
  expect_error<ValueError>([] { sum(scalar_tensor(3.5), {0, 0}); }, {"dim 0 appears multiple times in the list of dims"});
  expect_error<ValueError>([] { sum(scalar_tensor(3.5), {0, -1}); }, {"dim 0 appears multiple times"});
  EXPECT_EQ(sum(scalar_tensor(3.5), {-1}).item<double>(), 3.5);
}

TEST(TorchEdgeCases, HalfVarianceOfManyElementsFillOfAnExpandedTensorAndAddcdivOfIntegers) {
  // torch 1.13: var/std of 100000 float16 values of 0.1 are 0 (tally's float16 mean divided by a
  // count that is inf in float16, and gave 0.01 and 0.1).
  const Tensor h = full({100000}, 0.1, TensorOptions(kFloat16));
  EXPECT_EQ(h.var().item<float>(), 0.0f);
  EXPECT_EQ(tally::std(h).item<float>(), 0.0f);
  EXPECT_EQ(full({2, 100000}, 0.1, TensorOptions(kBFloat16)).var({1}).dtype(), kBFloat16);
  EXPECT_TRUE(full({2, 100000}, 0.1, TensorOptions(kFloat16)).var({1}).equal(zeros({2}, TensorOptions(kFloat16))));
  // fill_ and zero_ write one value, so an expanded tensor takes them, as torch's does.
  Tensor base = zeros({1, 3});
  Tensor wide = base.expand({2, 3});
  wide.fill_(2);
  EXPECT_TRUE(base.equal(full({1, 3}, 2.0)));
  wide.zero_();
  EXPECT_TRUE(base.equal(zeros({1, 3})));
  expect_error<ValueError>([&] { wide.add_(1); }, {"more than one element of the written-to tensor refers to a single memory location"});
  // addcdiv refuses integer tensor1 and tensor2 whatever self is; one floating divisor is fine.
  const Tensor one = tensor({1.0}), two = tensor({2}, TensorOptions(kInt64)), four = tensor({4}, TensorOptions(kInt64));
  expect_error<TypeError>([&] { addcdiv(one, two, four); }, {"Integer division with addcdiv is no longer supported"});
  expect_error<TypeError>([&] { addcdiv(one, tensor({true}), tensor({true})); }, {"Integer division with addcdiv"});
  EXPECT_EQ(addcdiv(one, two, tensor({4.0})).item<float>(), 1.5f);
  // bool − bool names ^ (torch's message); bool − float names ~.
  expect_error<TypeError>([] { tensor({true}) - tensor({true}); }, {"with two bool tensors is not supported", "logical_xor()"});
  expect_error<TypeError>([] { tensor({true}) - tensor({1.0}); }, {"with a bool tensor is not supported", "logical_not()"});
}

TEST(TorchEdgeCases, BoolIndicesAddAnAxisAndOverflowingViewsAreRefused) {
  using namespace tally::indexing;
  const Tensor x = arange(20, TensorOptions(kFloat64)).reshape({4, 5});
  // torch: x[True] is [1, 4, 5] (all of x), x[False] [0, 4, 5], x[:, True] [4, 1, 5]; a bool was
  // read as the integer 1 or 0 (a row).
  EXPECT_EQ(x.index({true}).sizes(), IntArrayRef({1, 4, 5}));
  EXPECT_TRUE(x.index({true}).select(0, 0).equal(x));
  EXPECT_EQ(x.index({false}).sizes(), IntArrayRef({0, 4, 5}));
  EXPECT_EQ(x.index({Slice(), true}).sizes(), IntArrayRef({4, 1, 5}));
  EXPECT_EQ(x.index({1, true, Ellipsis}).sizes(), IntArrayRef({1, 5}));
  // torch: "Storage size calculation overflowed with sizes=[3] and strides=[4611686018427387904]";
  // the wrapped reach passed the bound and the view read element 0 three times.
  expect_error<ValueError>([&] { x.as_strided({3}, {int64_t{1} << 62}); }, {"Storage size calculation overflowed with sizes=[3]"});
  expect_error<ValueError>([&] { x.as_strided({3, 2}, {int64_t{1} << 62, 1}); }, {"Storage size calculation overflowed"});
  // A step near INT64_MAX gave a size of -1; one element is what Python's list slice gives.
  const Tensor one_row = x.index({Slice(1, None, std::numeric_limits<int64_t>::max() - 1)});
  EXPECT_EQ(one_row.sizes(), IntArrayRef({1, 5}));
  EXPECT_TRUE(one_row.select(0, 0).equal(x.select(0, 1)));
  EXPECT_EQ(x.index({Slice(None, None, std::numeric_limits<int64_t>::max())}).sizes(), IntArrayRef({1, 5}));
}

TEST(TorchEdgeCases, BinaryCrossEntropyAtZeroAndOneAndEmptyGatherIndices) {
  // torch 1.13: the gradient is (p − t) / max(p·(1 − p), 1e-12), finite at p = 0 and 1 (the
  // clamped logs' own rule gave NaN there; float32's sigmoid reaches 1 from x ≈ 17).
  Tensor p = tensor({0.0, 1.0, 0.3, 0.9, 1e-30}).requires_grad_();
  const Tensor t = tensor({1.0, 0.0, 0.0, 1.0, 0.5});
  const Tensor loss = binary_cross_entropy(p, t, Reduction::Sum);
  EXPECT_NEAR(loss.item<float>(), 200.0 - std::log(0.7) - std::log(0.9) - 0.5 * std::log(1e-30), 5e-3);  // torch: 235.0008
  loss.backward();
  const std::vector<double> want = {-1e12, 1e12, 1.4285715, -1.1111112, -5e11};
  for (size_t i = 0; i < want.size(); ++i)
    EXPECT_NEAR(p.grad().select(0, static_cast<int64_t>(i)).item<float>(), want[i], std::abs(want[i]) * 1e-6) << i;
  // An empty index writes or reads nothing, and torch checks no shape then.
  const Tensor x = arange(6, TensorOptions(kFloat32)).reshape({2, 3});
  const Tensor none = zeros({0}, TensorOptions(kInt64));
  EXPECT_TRUE(x.scatter(0, none, zeros({0})).equal(x));
  EXPECT_TRUE(x.scatter_add(0, none, zeros({0})).equal(x));
  EXPECT_TRUE(x.scatter(0, zeros({0, 9}, TensorOptions(kInt64)), 1.0).equal(x));
  EXPECT_EQ(x.gather(0, none).sizes(), IntArrayRef({0}));
}
