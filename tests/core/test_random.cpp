// Random fills: distribution, independence between and within draws, and results that do not
// depend on the number of threads.

#include <gtest/gtest.h>
#include <omp.h>

#include <cmath>
#include <cstdint>
#include <limits>
#include <set>
#include <utility>

#include "expect_error.h"
#include "tally/tally.h"

namespace tally {
namespace {

double correlation(const Tensor& a, const Tensor& b) {
  Tensor x = a.to(kFloat64) - a.to(kFloat64).mean(), y = b.to(kFloat64) - b.to(kFloat64).mean();
  return (x * y).sum().item<double>() / std::sqrt((x * x).sum().item<double>() * (y * y).sum().item<double>());
}

/// floor() of a non-negative float64 tensor (through int64, which truncates).
Tensor floor_nonnegative(const Tensor& t) { return t.to(kInt64).to(kFloat64); }

double fraction(const Tensor& mask) { return mask.to(kFloat64).mean().item<double>(); }

TEST(Random, NormalHasTheNormalsShape) {
  manual_seed(1);
  Tensor x = randn({1 << 20}, kFloat64);
  EXPECT_NEAR(x.mean().item<double>(), 0.0, 0.005);
  EXPECT_NEAR(x.var().item<double>(), 1.0, 0.005);
  EXPECT_NEAR(fraction(x.abs().lt(scalar_tensor(1.0))), 0.682689, 0.002);
  EXPECT_NEAR(fraction(x.abs().gt(scalar_tensor(3.0))), 0.0026998, 0.0003);
  // Box–Muller pairs: the two normals of one pair are independent.
  Tensor pairs = x.view({-1, 2});
  EXPECT_LT(std::abs(correlation(pairs.select(1, 0), pairs.select(1, 1))), 0.006);
}

TEST(Random, Float32DrawsAreTheFloat64DrawsAtFloatPrecision) {
  // float32 takes the float Box–Muller path on the top 24 bits of the same uniforms: the same seed
  // gives the float64 values to float precision, and the float path keeps the normal's shape.
  Generator g32(5), g64(5);
  Tensor a = randn({1 << 20}, kFloat32, &g32), b = randn({1 << 20}, kFloat64, &g64);
  Tensor diff = (a.to(kFloat64) - b).abs();
  // 24 bits resolve u1 coarsely where the log is steep: just below 1 (a small radius, absolute
  // error up to ~2e-4) and near 0 (a pair radius r = sqrt(-2 ln u1) above 4: u1 < 3.4e-4 has
  // few bits left). The radius is the pair's, r² = z_even² + z_odd².
  Tensor radius = (b * b).view({-1, 2}).sum({1}, true).sqrt().expand({-1, 2}).reshape({-1});
  Tensor bulk = radius.lt(scalar_tensor(4.0));
  EXPECT_TRUE(where(bulk, diff.le(scalar_tensor(1e-3)), ones_like(bulk)).all().item<bool>());
  EXPECT_LT(diff.max().item<double>(), 0.05);
  EXPECT_LT(diff.mean().item<double>(), 1e-6);
  EXPECT_NEAR(a.to(kFloat64).var().item<double>(), 1.0, 0.005);
  EXPECT_LT(a.abs().max().item<float>(), 5.8f);  // sqrt(-2 ln 2^-24) = 5.77
  EXPECT_NEAR(fraction(a.abs().gt(scalar_tensor(3.0))), 0.0026998, 0.0003);
}

TEST(Random, ConsecutiveDrawsAreIndependent) {
  // Each draw uses fresh counters: no draw may reuse another's random bits, whatever the sizes
  // and whatever kind of draw follows.
  manual_seed(3);
  const int64_t n = 200001;  // odd: the next draw starts mid-pair
  Tensor a = randn({n}, kFloat64);
  Tensor b = randn({n}, kFloat64);
  Tensor u = rand({n}, kFloat64);
  Tensor c = randn({n}, kFloat64);
  const double bound = 5.0 / std::sqrt(static_cast<double>(n));
  EXPECT_LT(std::abs(correlation(a, b)), bound);
  EXPECT_LT(std::abs(correlation(b, u)), bound);
  EXPECT_LT(std::abs(correlation(u, c)), bound);
  EXPECT_LT(std::abs(correlation(a.abs(), u)), bound);
  // A normal's magnitude is a function of its first uniform: a draw that handed the same bits to
  // the next draw's every other element would show here (counters 2k of b = element 2k of u).
  const int64_t half = n / 2;
  EXPECT_LT(std::abs(correlation(b.slice(0, 0, half).abs(), u.slice(0, 0, 2 * half, 2))), 2 * bound);
  EXPECT_FALSE(a.slice(0, 1).equal(b.slice(0, 0, n - 1)));
}

TEST(Random, SameValuesWithOneThreadOrTwo) {
  const int saved = omp_get_max_threads();
  Generator g1(11), g2(11);
  omp_set_num_threads(1);
  Tensor one = randn({100003}, kFloat32, &g1);
  Tensor one_u = rand({100003}, kFloat32, &g1);
  omp_set_num_threads(2);
  Tensor two = randn({100003}, kFloat32, &g2);
  Tensor two_u = rand({100003}, kFloat32, &g2);
  omp_set_num_threads(saved);
  EXPECT_TRUE(one.equal(two));
  EXPECT_TRUE(one_u.equal(two_u));
}

TEST(Random, NormalInitFillsEveryElementOfAView) {
  Tensor base = full({64, 33}, 100.0);
  Tensor view = base.t();  // not contiguous
  nn::init::normal_(view, 2.0, 0.5);
  EXPECT_LT(base.max().item<double>(), 10.0);  // nothing left at 100
  EXPECT_NEAR(base.mean().item<double>(), 2.0, 0.05);
  EXPECT_NEAR(std::sqrt(base.var().item<double>()), 0.5, 0.05);
}

TEST(Random, UniformIsBelowOneInEveryDtype) {
  // torch draws rand with as many random bits as the dtype's significand holds (24 for float32,
  // 8 for bfloat16, 11 for float16, 53 for float64), so the value is exact and below 1:
  // torch.manual_seed(0); (torch.rand(10**6, dtype=torch.bfloat16) == 1).sum() -> tensor(0)
  // (rounding 53 bits to bfloat16 gave 1914 ones).
  const std::pair<Dtype, int> digits[] = {{kFloat32, 24}, {kFloat64, 53}, {kFloat16, 11}, {kBFloat16, 8}};
  for (auto [dtype, bits] : digits) {
    manual_seed(0);
    Tensor u = rand({1000000}, dtype).to(kFloat64);
    EXPECT_LT(u.max().item<double>(), 1.0) << dtype;
    EXPECT_GE(u.min().item<double>(), 0.0) << dtype;
    EXPECT_NEAR(u.mean().item<double>(), 0.5, 0.002) << dtype;
    // Every value is k / 2^digits: the draw uses exactly the dtype's bits.
    Tensor k = u * std::ldexp(1.0, bits);
    EXPECT_TRUE(k.equal(floor_nonnegative(k))) << dtype;
    // nn::init::uniform_ is built on the same draw: U(0, 1) is below 1 too.
    Tensor w = empty({1000000}, dtype);
    nn::init::uniform_(w);
    EXPECT_LT(w.to(kFloat64).max().item<double>(), 1.0) << dtype;
  }
}

TEST(Random, NarrowUniformsAreTheFloat64DrawTruncated) {
  // A seed gives one stream: a dtype with fewer bits keeps the top bits of the float64 draw, so
  // float32's value is float64's rounded down to 24 bits (and bfloat16's to 8).
  Generator g64(7), g32(7), g16(7);
  Tensor u64 = rand({100000}, kFloat64, &g64);
  Tensor u32 = rand({100000}, kFloat32, &g32).to(kFloat64);
  Tensor ubf = rand({100000}, kBFloat16, &g16).to(kFloat64);
  EXPECT_TRUE(u32.equal(floor_nonnegative(u64 * std::ldexp(1.0, 24)) * std::ldexp(1.0, -24)));
  EXPECT_TRUE(ubf.equal(floor_nonnegative(u64 * std::ldexp(1.0, 8)) * std::ldexp(1.0, -8)));
}

TEST(Random, RandintIsExactPast2To53) {
  // torch.randint(2**60, 2**60 + 10, (1000,)).unique() -> all ten values 2**60 .. 2**60 + 9
  // (through a double every draw came out as 2**60).
  manual_seed(0);
  const int64_t low = int64_t{1} << 60;
  Tensor r = randint(low, low + 10, {1000});
  ASSERT_EQ(r.dtype(), kInt64);
  const int64_t* p = r.data_ptr<int64_t>();
  std::set<int64_t> seen(p, p + r.numel());
  EXPECT_EQ(seen.size(), 10u);
  EXPECT_EQ(*seen.begin(), low);
  EXPECT_EQ(*seen.rbegin(), low + 9);
  // The full int64 range, whose width overflows int64: every value in [low, high).
  Tensor wide = randint(std::numeric_limits<int64_t>::min(), std::numeric_limits<int64_t>::max(), {1000});
  EXPECT_LT(wide.max().item<int64_t>(), std::numeric_limits<int64_t>::max());
  EXPECT_LT(wide.min().item<int64_t>(), 0);
}

}  // namespace
}  // namespace tally

namespace tally {
namespace {

// From the creation audit, each against torch 1.13: randint's ends must be values of the dtype
// (uint8 in [0, 300) wrapped); dropout keeps 1 − p of bfloat16 elements (its uniforms were drawn
// in bfloat16: p = 0.01 dropped 1.16%, p = 0.999 everything); truncated normals in a tail follow
// the distribution (a rough inverse erf piled 3332 of 4M samples on the bound, torch 17); a
// negative float does not wrap into uint8; arange past int64 names the overflow.
TEST(RandomAudit, RandintBoundsDropoutFractionTailsAndOverflows) {
  using test::expect_error;
  expect_error<ValueError>([] { randint(0, 300, {4}, TensorOptions(kUInt8)); }, {"to - 1 is out of bounds for uint8 (to=300)"});
  expect_error<ValueError>([] { randint(-10, 10, {4}, TensorOptions(kUInt8)); }, {"from is out of bounds for uint8 (from=-10)"});
  expect_error<ValueError>([] { randint(0, int64_t{1} << 40, {4}, TensorOptions(kInt32)); }, {"to - 1 is out of bounds for int32"});
  expect_error<ValueError>([] { randint(0, 3, {4}, TensorOptions(kBool)); }, {"to - 1 is out of bounds for bool"});
  expect_error<ValueError>([] { randint(0, 100000, {4}, TensorOptions(kFloat16)); }, {"to - 1 is out of bounds for float16"});
  EXPECT_EQ(randint(0, 256, {1000}, TensorOptions(kUInt8)).to(kInt64).max().item<int64_t>(), 255);
  EXPECT_EQ(randint(0, 2, {100}, TensorOptions(kBool)).dtype(), kBool);

  Generator g(21);
  const Tensor x = ones({4'000'000}, TensorOptions(kBFloat16));
  const double kept = (nn::F::dropout(x, 0.01, true, &g) != 0).to(kFloat64).mean().item<double>();
  EXPECT_NEAR(kept, 0.99, 5 * std::sqrt(0.99 * 0.01 / 4e6));
  const double few = (nn::F::dropout(x, 0.999, true, &g) != 0).to(kFloat64).mean().item<double>();
  EXPECT_NEAR(few, 0.001, 5 * std::sqrt(0.001 * 0.999 / 4e6));
  test::expect_error<TypeError>([&] { nn::F::dropout(zeros({3}, TensorOptions(kInt64)), 0.5); }, {"dropout: expected a floating point tensor, got int64"});

  Tensor tail = empty({4'000'000}, TensorOptions(kFloat64));
  nn::init::trunc_normal_(tail, 0.0, 1.0, -3.0, -2.5, &g);
  // The mean of N(0, 1) truncated to [−3, −2.5]: (φ(−3) − φ(−2.5)) / (Φ(−2.5) − Φ(−3)) = −2.69487.
  EXPECT_NEAR(tail.mean().item<double>(), -2.69487, 5 * 0.14 / std::sqrt(4e6));
  EXPECT_LT((tail == -2.5).sum().item<int64_t>(), 100);

  expect_error<ValueError>([] { full({2}, -1.0, TensorOptions(kUInt8)); }, {"value -1 cannot be converted to type uint8 without overflow"});
  expect_error<ValueError>([] { zeros({2}, TensorOptions(kUInt8)).fill_(-100.5); }, {"cannot be converted to type uint8"});
  EXPECT_EQ(full({2}, -1, TensorOptions(kUInt8)).to(kInt64).sum().item<int64_t>(), 510);  // an integer wraps, as in torch
  expect_error<ValueError>([] { full({1}, 0x1p63, TensorOptions(kInt64)); }, {"cannot be converted to type int64 without overflow"});
  EXPECT_EQ(full({1}, -0x1p63, TensorOptions(kInt64)).item<int64_t>(), std::numeric_limits<int64_t>::min());
  expect_error<ValueError>([] { full({1}, 255.5, TensorOptions(kUInt8)); }, {"value 255.5 cannot be converted to type uint8"});
  expect_error<ValueError>([] { arange(0, 1e20, 1.0); }, {"arange: invalid size, possible overflow?"});
  expect_error<ValueError>([] { arange(0, 1e30, 1, TensorOptions(kInt64)); }, {"value 1e+30 cannot be converted to type int64 without overflow"});
  expect_error<ValueError>([] { arange(0, std::numeric_limits<int64_t>::max(), 1); }, {"arange: invalid size, possible overflow?"});
  EXPECT_EQ(arange(0, int64_t{1} << 62, (int64_t{1} << 62) - 1).numel(), 2);
}

}  // namespace
}  // namespace tally
