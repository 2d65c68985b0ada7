// rearrange, reduce and repeat against the reshape / permute / reduction compositions they stand
// for, and whether they return views.

#include "einops/common.h"

using namespace tally;
using einops_test::expect_close;

namespace {
std::vector<int64_t> shape_of(const Tensor& t) { return t.sizes().vec(); }
}  // namespace

TEST(Rearrange, TransposeIsAView) {
  Tensor x = randn({2, 3, 4});
  Tensor y = einops::rearrange(x, "b s h -> b h s");
  EXPECT_TRUE(y.is_same_storage(x));
  EXPECT_TRUE(y.equal(x.permute({0, 2, 1})));
}

TEST(Rearrange, SplitHeadsIsAView) {
  Tensor x = randn({2, 5, 12});
  Tensor q = einops::rearrange(x, "b s (h d) -> b h s d", {{"h", 3}});
  EXPECT_TRUE(q.is_same_storage(x));
  EXPECT_TRUE(q.equal(x.reshape({2, 5, 3, 4}).permute({0, 2, 1, 3})));
  Tensor by_d = einops::rearrange(x, "b s (h d) -> b h s d", {{"d", 4}});
  EXPECT_TRUE(by_d.equal(q));
}

TEST(Rearrange, MergeCopiesOnlyWhenStridesForbidAView) {
  Tensor x = randn({2, 3, 4, 5});
  Tensor flat = einops::rearrange(x, "b c h w -> b (c h w)");
  EXPECT_TRUE(flat.is_same_storage(x));
  EXPECT_TRUE(flat.equal(x.reshape({2, 60})));
  Tensor p = x.permute({0, 2, 1, 3});  // "b h c w" as a strided view
  Tensor merged = einops::rearrange(p, "b h c w -> b h (c w)");
  EXPECT_FALSE(merged.is_same_storage(x));
  EXPECT_TRUE(merged.equal(p.contiguous().reshape({2, 4, 15})));
}

TEST(Rearrange, UnitAxesAndAnonymousOne) {
  Tensor x = randn({3, 4});
  Tensor u = einops::rearrange(x, "a b -> a () b 1");
  EXPECT_EQ(shape_of(u), (std::vector<int64_t>{3, 1, 4, 1}));
  EXPECT_TRUE(u.is_same_storage(x));
  Tensor back = einops::rearrange(u, "a 1 b () -> b a");
  EXPECT_TRUE(back.equal(x.t()));
  Tensor g = einops::rearrange(x, "a b -> (a 1) (1 b)");
  EXPECT_TRUE(g.equal(x));
}

TEST(Rearrange, EllipsisAnywhereAndInsideBracketsOnTheRight) {
  Tensor x = randn({2, 3, 4, 5});
  EXPECT_TRUE(einops::rearrange(x, "b ... -> b (...)").equal(x.reshape({2, 60})));
  EXPECT_TRUE(einops::rearrange(x, "b ... w -> w ... b").equal(x.permute({3, 1, 2, 0})));
  EXPECT_TRUE(einops::rearrange(x, "... -> ...").equal(x));
  EXPECT_TRUE(einops::rearrange(x, "b ... w -> (b w) ...").equal(x.permute({0, 3, 1, 2}).reshape({10, 3, 4})));
  Tensor v = randn({6});
  EXPECT_TRUE(einops::rearrange(v, "... (a b) -> ... b a", {{"a", 2}}).equal(v.reshape({2, 3}).t()));
}

TEST(Rearrange, DecomposeSeveralGroupsWithInference) {
  Tensor x = randn({24, 6});
  Tensor y = einops::rearrange(x, "(a b c) (d e) -> e c a d b", {{"a", 2}, {"b", 3}, {"d", 2}});
  EXPECT_TRUE(y.equal(x.reshape({2, 3, 4, 2, 3}).permute({4, 2, 0, 3, 1})));
}

TEST(Reduce, GroupedPoolingMatchesReshapeThenReduce) {
  Tensor x = randn({2, 4, 6, 3});
  Tensor want = x.reshape({2, 2, 2, 3, 2, 3}).amax({2, 4});
  EXPECT_TRUE(einops::reduce(x, "b (h 2) (w 2) c -> b h w c", "max").equal(want));
  Tensor mean = einops::reduce(x, "b (h h2) (w w2) c -> b c h w", "mean", {{"h2", 2}, {"w2", 3}});
  expect_close(mean, x.reshape({2, 2, 2, 2, 3, 3}).mean({2, 4}).permute({0, 3, 1, 2}), 1e-6, 1e-6);
}

TEST(Reduce, EveryReduction) {
  Tensor x = randn({3, 4, 5});
  expect_close(einops::reduce(x, "a b c -> a c", "sum"), x.sum({1}), 1e-6, 1e-6);
  expect_close(einops::reduce(x, "a b c -> a c", "mean"), x.mean({1}), 1e-6, 1e-6);
  EXPECT_TRUE(einops::reduce(x, "a b c -> a c", "max").equal(x.amax({1})));
  EXPECT_TRUE(einops::reduce(x, "a b c -> a c", "min").equal(x.amin({1})));
  expect_close(einops::reduce(x, "a b c -> a c", "prod"), prod(x, {1}), 1e-5, 1e-6);
  Tensor m = x.gt(zeros({1}));
  EXPECT_TRUE(einops::reduce(m, "a b c -> c a", "any").equal(any(m, {1}).t()));
  EXPECT_TRUE(einops::reduce(m, "a b c -> c a", "all").equal(all(m, {1}).t()));
}

TEST(Reduce, KeepUnitAxesAndReduceEverything) {
  Tensor x = randn({2, 3, 4});
  expect_close(einops::reduce(x, "b s h -> b () h", "mean"), x.mean({1}, true), 1e-6, 1e-6);
  expect_close(einops::reduce(x, "b s h -> 1 s 1", "sum"), x.sum({0, 2}, true), 1e-5, 1e-5);
  Tensor all_sum = einops::reduce(x, "... ->", "sum");
  EXPECT_EQ(all_sum.dim(), 0);
  expect_close(all_sum, x.sum(), 1e-5, 1e-5);
  // A reduction that removes nothing only reorders.
  EXPECT_TRUE(einops::reduce(x, "b s h -> h s b", "max").equal(x.permute({2, 1, 0})));
}

TEST(Reduce, StridedInput) {
  Tensor x = randn({6, 4}).t();  // (4, 6), non-contiguous
  expect_close(einops::reduce(x, "a (b 3) -> b a", "sum"), x.reshape({4, 2, 3}).sum({2}).t(), 1e-5, 1e-5);
}

TEST(Repeat, NewSeparateAxisIsAStrideZeroView) {
  Tensor x = randn({3, 4});
  Tensor y = einops::repeat(x, "h w -> h w c", {{"c", 5}});
  EXPECT_TRUE(y.is_same_storage(x));
  EXPECT_EQ(y.stride(2), 0);
  EXPECT_TRUE(y.equal(x.unsqueeze(2).expand({3, 4, 5})));
  Tensor b = einops::repeat(x, "h w -> b h w", {{"b", 2}});
  EXPECT_TRUE(b.is_same_storage(x));
  EXPECT_TRUE(b.equal(stack({x, x})));
}

TEST(Repeat, TileAndInterleaveCopy) {
  Tensor x = randn({2, 3});
  EXPECT_TRUE(einops::repeat(x, "h w -> (r h) w", {{"r", 2}}).equal(cat({x, x}, 0)));
  EXPECT_TRUE(einops::repeat(x, "h w -> (h 2) w").equal(x.unsqueeze(1).expand({2, 2, 3}).reshape({4, 3})));
  EXPECT_TRUE(einops::repeat(x, "h w -> w (h 3)").equal(x.t().unsqueeze(2).expand({3, 2, 3}).reshape({3, 6})));
}

TEST(Repeat, EllipsisAndUnitAxes) {
  Tensor x = randn({2, 1, 3});
  Tensor y = einops::repeat(x, "a 1 ... -> a k ...", {{"k", 4}});
  EXPECT_TRUE(y.equal(x.expand({2, 4, 3})));
}
