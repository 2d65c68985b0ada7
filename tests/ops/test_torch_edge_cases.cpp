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
