// multinomial by its distribution over many draws (with and without replacement), its
// determinism and PyTorch's errors; the ledger's rows and costs of sort, topk and multinomial.
// The values of sort, argsort and topk are checked against torch in the differential suite.

#include <gtest/gtest.h>

#include <cmath>
#include <map>
#include <vector>

#include "tally/tally.h"
#include "tests/expect_error.h"

namespace {

using namespace tally;
using accounting::Phase;
using tally::test::expect_error;

/// How many of `draws` (any shape) equal each category.
std::vector<int64_t> counts(const Tensor& draws, int64_t categories) {
  std::vector<int64_t> c(static_cast<size_t>(categories));
  const Tensor flat = draws.contiguous().reshape({-1});
  for (int64_t i = 0; i < flat.numel(); ++i) ++c.at(static_cast<size_t>(flat.data_ptr<int64_t>()[i]));
  return c;
}

/// |observed - expected| within 5 standard deviations of a binomial count: a check that fails
/// about once in 3 million by chance, and is seeded, so it fails the same way every run or never.
void expect_frequency(int64_t observed, double p, int64_t n, const std::string& what) {
  const double mean = p * static_cast<double>(n), sd = std::sqrt(static_cast<double>(n) * p * (1 - p));
  EXPECT_LE(std::abs(static_cast<double>(observed) - mean), 5 * sd + 1e-9) << what << ": " << observed << " draws, expected " << mean;
}

TEST(Multinomial, WithReplacementDrawsEachCategoryInProportion) {
  // Weights need not sum to one; a weight of 0 is never drawn.
  const std::vector<double> w = {0.2, 0.0, 0.6, 1.2};
  const Tensor weights = tensor({0.2, 0.0, 0.6, 1.2}, TensorOptions(kFloat64));
  const double total = 2.0;
  Generator g(11);
  for (Dtype dt : {kFloat32, kFloat64, kBFloat16}) {
    const int64_t n = 200000;
    Tensor draws = multinomial(weights.to(dt), n, /*replacement=*/true, &g);
    EXPECT_EQ(draws.dtype(), kInt64);
    EXPECT_EQ(draws.sizes(), IntArrayRef({n}));
    const auto c = counts(draws, 4);
    EXPECT_EQ(c[1], 0);
    for (size_t i = 0; i < w.size(); ++i) expect_frequency(c[i], w[i] / total, n, std::string(dtype_name(dt)) + " category " + std::to_string(i));
  }
}

TEST(Multinomial, WithoutReplacementDrawsInOrderFromWhatIsLeft) {
  // Rows of [1, 2, 3, 4], two draws each: P(first i, then j) = p_i · p_j / (1 − p_i).
  const int64_t rows = 60000;
  Generator g(5);
  Tensor probs = tensor({1.0, 2.0, 3.0, 4.0}).expand({rows, 4});
  Tensor draws = probs.multinomial(2, false, &g);
  ASSERT_EQ(draws.sizes(), IntArrayRef({rows, 2}));
  std::map<std::pair<int64_t, int64_t>, int64_t> pairs;
  const Tensor d = draws.contiguous();
  for (int64_t r = 0; r < rows; ++r) {
    const int64_t a = d.data_ptr<int64_t>()[2 * r], b = d.data_ptr<int64_t>()[2 * r + 1];
    ASSERT_NE(a, b) << "row " << r << " drew category " << a << " twice";
    ++pairs[{a, b}];
  }
  for (int64_t i = 0; i < 4; ++i)
    for (int64_t j = 0; j < 4; ++j)
      if (i != j) {
        const double pi = static_cast<double>(i + 1) / 10, pj = static_cast<double>(j + 1) / 10;
        expect_frequency(pairs[{i, j}], pi * pj / (1 - pi), rows, "pair (" + std::to_string(i) + ", " + std::to_string(j) + ")");
      }
  // Every category once, the ones of weight 0 last in index order (torch: [0.5, 0, 0.5] gives 1 last).
  Tensor all = multinomial(tensor({0.5, 0.0, 0.5, 0.0}), 4, false, &g);
  EXPECT_TRUE(all.narrow(0, 2, 2).equal(tensor({1, 3}, TensorOptions(kInt64))));
  EXPECT_TRUE(std::get<0>(all.sort()).equal(arange(4)));
}

TEST(Multinomial, EachRowHasItsOwnDistribution) {
  Generator g(3);
  Tensor probs = tensor({{1.0, 0.0, 0.0}, {0.0, 0.0, 1.0}, {0.0, 1.0, 0.0}});
  EXPECT_TRUE(probs.multinomial(5, true, &g).equal(tensor({{0, 0, 0, 0, 0}, {2, 2, 2, 2, 2}, {1, 1, 1, 1, 1}}, TensorOptions(kInt64))));
  EXPECT_EQ(multinomial(zeros({0, 3}), 2, true, &g).sizes(), IntArrayRef({0, 2}));
}

TEST(Multinomial, TheSameGeneratorStateGivesTheSameDraws) {
  Tensor probs = softmax(randn({8, 50}), -1);
  Generator a(42), b(42);
  EXPECT_TRUE(multinomial(probs, 10, true, &a).equal(multinomial(probs, 10, true, &b)));
  EXPECT_TRUE(multinomial(probs, 10, false, &a).equal(multinomial(probs, 10, false, &b)));
  EXPECT_FALSE(multinomial(probs, 10, true, &a).equal(multinomial(probs, 10, true, &a)));  // the state moves on
  // A transposed (non-contiguous) probs tensor draws as its contiguous copy does.
  Tensor t = probs.t().contiguous().t();
  Generator c(9), d(9);
  EXPECT_TRUE(multinomial(t, 10, true, &c).equal(multinomial(probs, 10, true, &d)));
}

TEST(Multinomial, RefusesWhatTorchRefusesWithItsMessages) {
  Generator g(1);
  expect_error<ValueError>([&] { multinomial(ones({2, 2, 2}), 1, false, &g); }, {"prob_dist must be 1 or 2 dim"});
  expect_error<TypeError>([&] { multinomial(ones({2}, TensorOptions(kInt64)), 1, false, &g); },
                          {"multinomial only supports floating-point dtypes for input, got: int64"});
  expect_error<ValueError>([&] { multinomial(ones({2}), 0, false, &g); }, {"cannot sample n_sample <= 0 samples"});
  expect_error<ValueError>([&] { multinomial(ones({2}), 3, false, &g); },
                           {"cannot sample n_sample > prob_dist.size(-1) samples without replacement", "3 samples from 2 categories"});
  expect_error<ValueError>([&] { multinomial(tensor({-1.0, 2.0}), 1, false, &g); },
                           {"probability tensor contains either `inf`, `nan` or element < 0", "element 0 is -1"});
  expect_error<ValueError>([&] { multinomial(tensor({NAN, 2.0}), 1, true, &g); }, {"`inf`, `nan` or element < 0"});
  expect_error<ValueError>([&] { multinomial(tensor({INFINITY, 2.0}), 1, true, &g); }, {"`inf`, `nan` or element < 0"});
  expect_error<ValueError>([&] { multinomial(tensor({{1.0, 1.0}, {0.0, 0.0}}), 1, true, &g); },
                           {"invalid multinomial distribution (sum of probabilities <= 0) in row 1"});
}

TEST(Ordering, LedgerRowsAndCosts) {
  Tensor x = randn({8, 100});
  accounting::FlopCounter counter;
  auto [values, indices] = x.sort(-1, true);
  auto [top, where] = x.topk(5);
  Tensor drawn = softmax(x, -1).multinomial(3);
  // sort: ⌈log2 100⌉ = 7 comparisons per element, then the values gathered; topk: ⌈log2 5⌉ = 3.
  EXPECT_EQ(counter.op("argsort", Phase::Forward).flops, 800 * 7);
  EXPECT_EQ(counter.op("topk", Phase::Forward).flops, 800 * 3);
  EXPECT_EQ(counter.op("multinomial", Phase::Forward).flops, 800);
  EXPECT_EQ(counter.op("gather", Phase::Forward).calls, 2);
  EXPECT_TRUE(values.equal(x.gather(1, indices)));
  EXPECT_TRUE(top.equal(values.narrow(1, 0, 5)));
  EXPECT_TRUE(where.equal(indices.narrow(1, 0, 5)));
}

TEST(Ordering, SortIsStableAndPutsNanLast) {
  // torch.sort(tensor([1., nan, 0, nan, -1]), stable=True): indices [4, 2, 0, 1, 3]; descending [1, 3, 0, 2, 4].
  Tensor x = tensor({1.0, NAN, 0.0, NAN, -1.0});
  EXPECT_TRUE(std::get<1>(x.sort()).equal(tensor({4, 2, 0, 1, 3}, TensorOptions(kInt64))));
  EXPECT_TRUE(std::get<1>(x.sort(0, true)).equal(tensor({1, 3, 0, 2, 4}, TensorOptions(kInt64))));
  // topk counts NaN as the largest (torch: [1, 3] largest, [4, 2] smallest).
  EXPECT_TRUE(std::get<1>(x.topk(2)).equal(tensor({1, 3}, TensorOptions(kInt64))));
  EXPECT_TRUE(std::get<1>(x.topk(2, 0, false)).equal(tensor({4, 2}, TensorOptions(kInt64))));
  Tensor ties = tensor({2, 1, 2, 1, 2}, TensorOptions(kInt32));
  EXPECT_TRUE(ties.argsort(0, true).equal(tensor({0, 2, 4, 1, 3}, TensorOptions(kInt64))));
  expect_error<IndexError>([&] { x.topk(6); }, {"selected index k out of range", "k = 6", "of size 5"});
  expect_error<TypeError>([&] { ones({3}, TensorOptions(kBool)).topk(1); }, {"\"topk_cpu\" not implemented for 'Bool'"});
}

}  // namespace
