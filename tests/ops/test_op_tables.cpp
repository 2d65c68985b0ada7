// The op tables (tally/table/unary_ops.h, binary_ops.h): every row has every form, and the forms
// agree; logit, the op added as one row, end to end.

#include <gtest/gtest.h>

#include <cmath>
#include <limits>

#include "tally/ops/registry.h"
#include "tally/tally.h"
#include "expect_error.h"

namespace tally {
namespace {

using tally::test::expect_error;

/// Inputs inside an op's domain, float64, on a transposed view.
Tensor sample(std::string_view domain, uint64_t seed) {
  Generator gen(seed);
  Tensor x = rand({5, 4}, kFloat64, &gen).t();
  if (domain == "positive") return x * 2 + 0.5;
  if (domain == "unit") return x * 0.8 + 0.1;
  return x * 4 - 2;
}

TEST(OpTables, EveryUnaryRowHasEveryFormAndTheyAgree) {
  EXPECT_GE(ops::unary_ops().size(), 26u);
  uint64_t seed = 1;
  for (const ops::UnaryOpInfo& u : ops::unary_ops()) {
    SCOPED_TRACE(std::string(u.name));
    const Tensor x = sample(u.domain, seed++);
    const Tensor expected = u.fn(x);
    EXPECT_TRUE(u.method(x).equal(expected));
    Tensor out = empty({0}, kFloat64);
    EXPECT_TRUE(u.out(out, x).equal(expected));
    EXPECT_TRUE(out.equal(expected)) << "out= writes its tensor";
    const Tensor y = x.clone();
    Tensor& same = u.inplace(y);
    EXPECT_TRUE(same.is_same(y)) << "in place returns self";
    EXPECT_TRUE(y.equal(expected));
    EXPECT_FALSE(u.summary.empty());
  }
}

TEST(OpTables, EveryBinaryRowHasEveryFormAndTheyAgree) {
  EXPECT_GE(ops::binary_ops().size(), 11u);
  uint64_t seed = 100;
  for (const ops::BinaryOpInfo& b : ops::binary_ops()) {
    SCOPED_TRACE(std::string(b.name));
    const Tensor x = sample("positive", seed++), y = sample("positive", seed++).select(0, 1);  // broadcast
    const Tensor expected = b.fn(x, y);
    EXPECT_TRUE(b.method(x, y).equal(expected));
    Tensor out = empty({0}, expected.dtype());
    EXPECT_TRUE(b.out(out, x, y).equal(expected));
    const Tensor z = x.clone();
    EXPECT_TRUE(b.inplace(z, y).is_same(z));
    EXPECT_TRUE(z.equal(expected.to(kFloat64))) << "a comparison in place writes 0 or 1";
  }
}

TEST(OpTables, LogitFromItsRow) {
  const double inf = std::numeric_limits<double>::infinity();
  const Tensor x = tensor({0.25, 0.5, 0.0, 1.0, 2.0}, kFloat64);
  const Tensor y = logit(x);
  EXPECT_NEAR(y[0].item<double>(), std::log(1.0 / 3.0), 1e-15);
  EXPECT_EQ(y[1].item<double>(), 0.0);
  EXPECT_EQ(y[2].item<double>(), -inf);
  EXPECT_EQ(y[3].item<double>(), inf);
  EXPECT_TRUE(std::isnan(y[4].item<double>()));
  EXPECT_EQ(logit(tensor({0, 1})).dtype(), kFloat32) << "integers compute in the default dtype";
  // Its gradient, 1/(x(1 − x)), through autograd.
  const Tensor p = tensor({0.25, 0.5}, kFloat64).requires_grad_();
  p.logit().sum().backward();
  EXPECT_TRUE(p.grad().allclose(tensor({1 / (0.25 * 0.75), 4.0}, kFloat64)));
  // Its ledger row: three steps per element, as its definition declares.
  accounting::FlopCounter counter;
  logit(ones({10, 10}) * 0.5);
  EXPECT_EQ(counter.op("logit", accounting::Phase::Forward).flops, 300);
  // In place and out= refuse what their tensor cannot hold, as torch's do.
  expect_error<TypeError>([] { tensor({1, 2}).logit_(); }, {"result type float32 can't be cast to the desired output type int64"});
}

}  // namespace
}  // namespace tally
