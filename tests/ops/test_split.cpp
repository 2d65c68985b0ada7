// split, split_with_sizes, chunk, unbind and unflatten (views, gradients back to their parts),
// std and logsumexp, and clip_grad_value_: values, shapes and errors as torch 1.13's.

#include <gtest/gtest.h>

#include <cmath>
#include <vector>

#include "tally/tally.h"
#include "tests/expect_error.h"

namespace {

using namespace tally;
using tally::test::expect_error;

std::vector<DimVector> shapes(const TensorList& pieces) {
  std::vector<DimVector> out;
  for (const Tensor& p : pieces) out.emplace_back(p.sizes());
  return out;
}

void expect_values(const Tensor& t, const std::vector<double>& want, double tol = 1e-12) {
  const Tensor c = t.to(kFloat64).contiguous().reshape({-1});
  ASSERT_EQ(c.numel(), static_cast<int64_t>(want.size()));
  for (size_t i = 0; i < want.size(); ++i) {
    if (std::isinf(want[i])) EXPECT_EQ(c.data_ptr<double>()[i], want[i]) << i;
    else EXPECT_NEAR(c.data_ptr<double>()[i], want[i], tol * std::max(1.0, std::abs(want[i]))) << i;
  }
}

TEST(Split, PiecesAreViewsOfTorchsSizes) {
  const Tensor x = arange(10, TensorOptions(kFloat32)).view({5, 2});
  const TensorList pieces = split(x, 2);
  EXPECT_EQ(shapes(pieces), (std::vector<DimVector>{{2, 2}, {2, 2}, {1, 2}}));
  EXPECT_TRUE(pieces[2].is_same_storage(x));
  EXPECT_EQ(pieces[2].sum().item<float>(), 17.0f);
  EXPECT_EQ(shapes(split_with_sizes(x, {1, 4})), (std::vector<DimVector>{{1, 2}, {4, 2}}));
  EXPECT_EQ(shapes(split(x, 1, -1)), (std::vector<DimVector>{{5, 1}, {5, 1}}));
  EXPECT_EQ(shapes(chunk(arange(5), 3)), (std::vector<DimVector>{{2}, {2}, {1}}));
  EXPECT_EQ(shapes(chunk(arange(6), 4)), (std::vector<DimVector>{{2}, {2}, {2}}));  // fewer than asked, as torch's
  EXPECT_EQ(shapes(chunk(empty({0}), 3)), (std::vector<DimVector>{{0}, {0}, {0}}));
  EXPECT_EQ(shapes(split(empty({0, 2}), 0)), (std::vector<DimVector>{{0, 2}}));
  EXPECT_EQ(shapes(unbind(x, 1)), (std::vector<DimVector>{{5}, {5}}));
  EXPECT_EQ(unflatten(arange(24).view({4, 6}), 1, {2, -1}).sizes(), IntArrayRef({4, 2, 3}));
  EXPECT_EQ(unflatten(arange(24), 0, {2, 3, 4}).sizes(), IntArrayRef({2, 3, 4}));

  expect_error<ValueError>([&] { split(arange(4), 0); }, {"split_size can only be 0 if dimension size is 0, but got dimension size of 4"});
  expect_error<ValueError>([&] { split(arange(4), -1); }, {"split expects split_size be non-negative, but got split_size=-1"});
  expect_error<ValueError>([&] { split_with_sizes(arange(4), {1, 2}); },
                           {"split_with_sizes expects split_sizes to sum exactly to 4 (input tensor's size at dimension 0), but got split_sizes=[1, 2]"});
  expect_error<ValueError>([&] { split_with_sizes(arange(4), {-1, 5}); }, {"only non-negative entries", "[-1, 5]"});
  expect_error<ValueError>([&] { chunk(arange(4), 0); }, {"chunk expects `chunks` to be greater than 0, got: 0"});
  expect_error<IndexError>([&] { unbind(scalar_tensor(3.0)); }, {"Dimension specified as 0 but tensor has no dimensions"});
  expect_error<ValueError>([&] { unflatten(arange(4), 0, {3, -1}); }, {"unflatten: Provided sizes [3, -1] don't multiply up to the size of dim 0 (4)"});
  expect_error<ValueError>([&] { unflatten(arange(4), 0, {-1, -1}); }, {"only one dimension can be inferred"});
  expect_error<ValueError>([&] { unflatten(arange(4), 0, {}); }, {"unflatten: sizes must be non-empty"});
}

TEST(Split, GradientsReturnToEachPiecesPart) {
  Tensor x = arange(6, TensorOptions(kFloat64)).requires_grad_();
  const TensorList pieces = chunk(x, 3);
  (pieces[0].sum() * 1 + pieces[1].sum() * 2 + pieces[2].sum() * 3).backward();
  expect_values(x.grad(), {1, 1, 2, 2, 3, 3});
  Tensor y = arange(6, TensorOptions(kFloat64)).view({2, 3}).requires_grad_();
  (unbind(y, 1)[2] * 5).sum().backward();
  expect_values(y.grad(), {0, 0, 5, 0, 0, 5});
}

// Reference: torch.std(x, 1), torch.std(x, 0, correction=0), torch.logsumexp(x, 1) and their
// gradients, on x = [[1, 2, 4, 8], [-1, 0.5, 3, 1000]] in float64.
TEST(Reduce, StdAndLogsumexpAreTorchs) {
  const Tensor x0 = tensor({{1.0, 2, 4, 8}, {-1, 0.5, 3, 1000}}).to(kFloat64);
  expect_values(tally::std(x0, {1}), {3.0956959368344514, 499.5860578185371});
  expect_values(tally::std(x0, {0}, 0), {1.0, 0.75, 0.5, 496.0});
  expect_values(logsumexp(x0, {1}), {8.021474046393745, 1000.0});
  expect_values(logsumexp(x0), {1000.0});
  EXPECT_EQ(logsumexp(x0, {0}, true).sizes(), IntArrayRef({1, 4}));
  EXPECT_EQ(logsumexp(x0, {1}).sizes(), IntArrayRef({2}));
  const Tensor ints = logsumexp(tensor({int64_t{1}, 2, 3}), {0});
  EXPECT_EQ(ints.dtype(), kFloat32);
  EXPECT_NEAR(ints.item<float>(), 3.4076058864593506, 1e-6);
  expect_values(logsumexp(tensor({{-INFINITY, -INFINITY}, {INFINITY, 1.0}}), {1}), {-INFINITY, INFINITY});

  Tensor x = x0.clone().requires_grad_();
  logsumexp(x, {1}).sum().backward();
  expect_values(x.grad(), {0.0008925089231852923, 0.0024260907876321298, 0.017926520930912654, 0.9787548793582695, 0, 0, 0, 1});
  Tensor s = x0.clone().requires_grad_();
  tally::std(s, {1}).sum().backward();
  expect_values(s.grad(), {-0.29611004613199104, -0.18843366572035794, 0.026919095102908276, 0.4576246167494407, -0.1678889926717403,
                           -0.16688816410141694, -0.16522011648421137, 0.4999972732573686},
                1e-10);
}

// torch.logsumexp over an empty slice is -inf (tally's shift raised amax's error), torch.std's
// gradient is 0 where the result is 0 (sqrt's rule gave NaN), and unflatten of a 0-d tensor raises.
TEST(Reduce, EdgesOfStdLogsumexpAndUnflattenAreTorchs) {
  expect_values(logsumexp(zeros({0}), {0}), {-INFINITY});
  expect_values(logsumexp(zeros({2, 0}), {1}), {-INFINITY, -INFINITY});
  EXPECT_EQ(logsumexp(zeros({0, 3}), {1}).sizes(), IntArrayRef({0}));
  Tensor x = tensor({3.0, 3.0, 1.0, 2.0}).to(kFloat64).view({2, 2}).requires_grad_();
  const Tensor s = tally::std(x, {1});
  expect_values(s.detach(), {0.0, 0.7071067811865476});
  s.sum().backward();
  expect_values(x.grad(), {0.0, 0.0, -0.7071067811865476, 0.7071067811865476});
  EXPECT_TRUE(std::isnan(tally::std(tensor({1.0}).to(kFloat64)).item<double>()));  // one element, correction 1: nan, as torch
  expect_error<IndexError>([] { unflatten(scalar_tensor(5.0), 0, {1, 1}); }, {"Dimension specified as 0 but tensor has no dimensions"});
}

TEST(ClipGradValue, ClampsEachGradientAndSkipsTheMissing) {
  Tensor w = zeros({4}).requires_grad_(), unused = zeros({2}).requires_grad_();
  w.set_grad(tensor({-3.0f, -0.5f, 0.25f, 7.0f}));
  accounting::FlopCounter counter;
  nn::utils::clip_grad_value_({w, unused}, 1.0);
  expect_values(w.grad(), {-1, -0.5, 0.25, 1});
  EXPECT_FALSE(unused.grad().defined());
  EXPECT_EQ(counter.op("clamp", accounting::Phase::Optimizer).calls, 1);
}

}  // namespace
