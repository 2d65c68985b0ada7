// Views share storage and never copy; reshape copies only when strides force it; writes
// through views reach the base.

#include <gtest/gtest.h>

#include "tally/tally.h"
#include "tests/expect_error.h"

using namespace tally;
using namespace tally::indexing;

TEST(Views, GeometryOfEachView) {
  Tensor x = arange(24).view({2, 3, 4});
  Tensor p = x.permute({2, 0, 1});
  EXPECT_EQ(p.sizes(), IntArrayRef({4, 2, 3}));
  EXPECT_EQ(p.strides(), IntArrayRef({1, 12, 4}));
  Tensor e = arange(3).view({3, 1}).expand({2, 3, 5});
  EXPECT_EQ(e.strides(), IntArrayRef({0, 1, 0}));
  EXPECT_EQ(x.unsqueeze(1).sizes(), IntArrayRef({2, 1, 3, 4}));
  EXPECT_EQ(x.unsqueeze(-1).strides(), IntArrayRef({12, 4, 1, 1}));
  EXPECT_EQ(ones({1, 3, 1}).squeeze().sizes(), IntArrayRef({3}));
  EXPECT_EQ(ones({1, 3, 1}).squeeze(0).sizes(), IntArrayRef({3, 1}));
  EXPECT_EQ(ones({1, 3, 1}).squeeze(1).sizes(), IntArrayRef({1, 3, 1}));
  Tensor n = x.narrow(2, 1, 2);
  EXPECT_EQ(n.sizes(), IntArrayRef({2, 3, 2}));
  EXPECT_EQ(n.storage_offset(), 1);
  Tensor s = x.slice(1, -2, std::nullopt, 1);
  EXPECT_EQ(s.size(1), 2);
  EXPECT_EQ(s.storage_offset(), 4);
  EXPECT_EQ(x.slice(2, 10, 20).size(2), 0);  // clamped like Python
  EXPECT_EQ(x.flatten(1).sizes(), IntArrayRef({2, 12}));
}

TEST(Views, IndexWithNoneAndEllipsis) {
  Tensor x = arange(24).view({2, 3, 4});
  EXPECT_EQ(x.index({Ellipsis, 1}).sizes(), IntArrayRef({2, 3}));
  EXPECT_EQ(x.index({None, Slice(), 0}).sizes(), IntArrayRef({1, 2, 4}));
  EXPECT_EQ(x.index({1, Ellipsis, None}).sizes(), IntArrayRef({3, 4, 1}));
  EXPECT_EQ(x.index({-1, -1, -1}).item<int64_t>(), 23);
  Tensor stepped = x.index({Slice(), Slice(None, None, 2), Slice(1, None, 2)});
  EXPECT_EQ(stepped.sizes(), IntArrayRef({2, 2, 2}));
  EXPECT_TRUE(stepped.equal(tensor({{{1, 3}, {9, 11}}, {{13, 15}, {21, 23}}})));
}

TEST(Views, EllipsisSpelledAsAStringAndErrorsNameTheSourceDim) {
  Tensor x = arange(24).view({2, 3, 4});
  // libtorch writes Ellipsis as "..."; it once converted to bool (a non-null pointer) and added an axis.
  EXPECT_EQ(x.index({"...", None}).sizes(), IntArrayRef({2, 3, 4, 1}));
  EXPECT_EQ(x.index({0, "...", 1}).sizes(), IntArrayRef({3}));
  EXPECT_TRUE(x.index({"...", 2}).equal(x.index({Ellipsis, 2})));
  tally::test::expect_error<IndexError>([&] { x.index({"..", 0}); }, {"Expected \"...\" to represent an ellipsis index, but got \"..\""});
  // An integer out of range is named by its position in the index list, as PyTorch 1.13 names it:
  // torch.arange(24).view(2, 3, 4)[0, 5], [..., -5] and [None, :, 1, 4] raise these three.
  tally::test::expect_error<IndexError>([&] { x.index({0, 5}); }, {"index 5 is out of bounds for dimension 1 with size 3"});
  tally::test::expect_error<IndexError>([&] { x.index({"...", -5}); }, {"index -5 is out of bounds for dimension 1 with size 4"});
  tally::test::expect_error<IndexError>([&] { x.index({None, Slice(), 1, 4}); }, {"index 4 is out of bounds for dimension 3 with size 4"});
}

TEST(Views, ATensorWithNoElementsIsContiguousWhateverItsStrides) {
  const Tensor base = zeros({200});
  const Tensor empty_view = base.as_strided({2, 0, 4}, {60, 20, 5});
  EXPECT_TRUE(empty_view.is_contiguous());  // PyTorch: every tensor with no elements is
  EXPECT_FALSE(base.as_strided({2, 1, 4}, {60, 20, 5}).is_contiguous());
}

TEST(Views, SubscriptSelectsAlongTheFirstDim) {
  const Tensor x = arange(24).view({2, 3, 4});
  EXPECT_TRUE(x[1].equal(x.select(0, 1)));
  EXPECT_EQ(x[1][2][3].item<int64_t>(), 23);
  EXPECT_EQ(x[-1][0].sizes(), IntArrayRef({4}));
  EXPECT_TRUE(x[0].is_alias_of(x));
  tally::test::expect_error<IndexError>([&] { (void)x[2]; }, {"index 2 is out of bounds for dimension 0 with size 2"});
}

TEST(Views, ToOptionsKeepsWhatTheyLeaveUnset) {
  const Tensor x = arange(6).view({2, 3});
  const Tensor d = x.to(x.options().dtype(kFloat64));
  EXPECT_EQ(d.dtype(), kFloat64);
  EXPECT_EQ(d.device(), x.device());
  EXPECT_TRUE(x.to(TensorOptions()).is_same(x)) << "nothing to change: the tensor itself, as PyTorch's";
  EXPECT_EQ(x.to(TensorOptions().device(kMeta)).device(), Device(kMeta));
}

TEST(Views, AViewIsAnAliasOfItsBaseAndACopyIsNot) {
  const Tensor x = zeros({4, 6});
  EXPECT_TRUE(x.transpose(0, 1).is_alias_of(x));
  EXPECT_TRUE(x.index({Slice(1, 3)}).is_alias_of(x.index({0})));
  EXPECT_FALSE(x.clone().is_alias_of(x));
  EXPECT_FALSE(Tensor().is_alias_of(x));
}

TEST(Views, NoCopyAndWritesReachBase) {
  Tensor x = zeros({4, 6});
  accounting::MemoryTracker tracker;
  Tensor col = x.index({Slice(), 2});
  Tensor tt = x.t();
  Tensor v = x.view({6, 4});
  Tensor r = x.reshape({2, 12});  // viewable: no copy
  EXPECT_EQ(tracker.allocated_since_start(), 0);
  EXPECT_TRUE(r.is_same_storage(x));
  col.fill_(7);
  EXPECT_EQ(x.index({3, 2}).item<float>(), 7.0f);
  tt.index_put_({5, 0}, 9);
  EXPECT_EQ(x.index({0, 5}).item<float>(), 9.0f);
  x.index_put_({Slice(0, 2), Slice(0, 2)}, tensor({{1., 2}, {3, 4}}));
  EXPECT_EQ(v.index({0, 1}).item<float>(), 2.0f);
  // reshape of a transposed tensor cannot be a view: it copies exactly once.
  Tensor copied = x.t().reshape({24});
  EXPECT_FALSE(copied.is_same_storage(x));
  EXPECT_EQ(tracker.allocated_since_start(), memory_usage(copied));
}

TEST(Views, ContiguityRule) {
  EXPECT_TRUE(ones({3, 1, 4}).is_contiguous());
  EXPECT_TRUE(ones({3, 1, 4}).as_strided({3, 1, 4}, {4, 99, 1}).is_contiguous());  // size-1 dims: any stride
  EXPECT_FALSE(ones({3, 4}).t().is_contiguous());
  EXPECT_TRUE(ones({1, 4}).t().is_contiguous());
  EXPECT_TRUE(zeros({0, 3}).t().is_contiguous());
  Tensor x = arange(10).index({Slice(None, None, 2)});
  EXPECT_FALSE(x.is_contiguous());
  Tensor c = x.contiguous();
  EXPECT_TRUE(c.is_contiguous());
  EXPECT_TRUE(c.equal(tensor({0, 2, 4, 6, 8})));
  EXPECT_TRUE(c.contiguous().is_same(c));  // already contiguous: same tensor
}

TEST(Copies, CopyBroadcastsAndConverts) {
  Tensor dst = zeros({2, 3}, kFloat64);
  dst.copy_(tensor({1, 2, 3}));
  EXPECT_TRUE(dst.equal(tensor({{1., 2, 3}, {1, 2, 3}}, kFloat64)));
  Tensor h = tensor({1.0009765625, 65504.0, 70000.0}).to(kFloat16);
  EXPECT_EQ(h.index({0}).item<float>(), 1.0009765625f);
  EXPECT_TRUE(std::isinf(h.index({2}).item<float>()));
  EXPECT_TRUE(tensor({0.0, 2.5, -1.0}).to(kBool).equal(tensor({false, true, true})));
  EXPECT_TRUE(tensor({2.7, -2.7}).to(kInt64).equal(tensor({2, -2})));  // truncation toward zero
  Tensor c = tensor({1., 2, 3}).clone();
  EXPECT_FALSE(c.is_same_storage(tensor({1., 2, 3})));
}

TEST(Creation, Factories) {
  EXPECT_TRUE(arange(1, 4).equal(tensor({1, 2, 3})));
  EXPECT_EQ(arange(0.0, 1.0, 0.25).numel(), 4);
  EXPECT_EQ(arange(5).dtype(), kInt64);
  EXPECT_EQ(arange(5.0).dtype(), kFloat32);
  EXPECT_TRUE(eye(2, 3).equal(tensor({{1, 0, 0}, {0, 1, 0}})));
  EXPECT_EQ(full({2}, 7).dtype(), kInt64);
  EXPECT_EQ(full({2}, 7.5).dtype(), kFloat32);
  EXPECT_EQ(full({2}, true).dtype(), kBool);
  EXPECT_TRUE(tril(ones({3, 3}), -1).equal(tensor({{0, 0, 0}, {1, 0, 0}, {1, 1, 0}})));
  EXPECT_TRUE(triu(ones({2, 3}), 1).equal(tensor({{0, 1, 1}, {0, 0, 1}})));
}

TEST(Random, SeededAndReproducible) {
  manual_seed(42);
  Tensor a = randn({1000});
  manual_seed(42);
  Tensor b = randn({1000});
  EXPECT_TRUE(a.equal(b));
  EXPECT_NEAR(randn({100000}).mean().item<double>(), 0.0, 0.02);
  EXPECT_NEAR(randn({100000}).var().item<double>(), 1.0, 0.03);
  Tensor u = rand({100000});
  EXPECT_GE(u.min().item<float>(), 0.0f);
  EXPECT_LT(u.max().item<float>(), 1.0f);
  Tensor k = randint(3, 7, {10000});
  EXPECT_EQ(k.min().item<int64_t>(), 3);
  EXPECT_EQ(k.max().item<int64_t>(), 6);
  // A generator's state restores its sequence exactly (what checkpoints rely on).
  Generator g(7);
  randn({10}, kFloat32, &g);
  GeneratorState saved = g.get_state();
  Tensor next = randn({10}, kFloat32, &g);
  g.set_state(saved);
  EXPECT_TRUE(randn({10}, kFloat32, &g).equal(next));
}

TEST(Random, TruncNormalUsesAbsoluteBounds) {
  Tensor w = empty({20000});
  nn::init::trunc_normal_(w, 1.0, 2.0, 0.5, 1.5);  // bounds are values, not standard deviations
  EXPECT_GE(w.min().item<float>(), 0.5f);
  EXPECT_LE(w.max().item<float>(), 1.5f);
  EXPECT_NEAR(w.mean().item<double>(), 1.0, 0.02);
}

TEST(Allocator, CachesLargeBlocksAndReportsBothNumbers) {
  auto& alloc = CpuAllocator::get();
  const int64_t bytes = int64_t{64} << 20;
  { Tensor warm = empty({bytes / 4}); }  // the block now sits in the cache
  const MemoryStats before = alloc.stats();
  {
    Tensor t = empty({bytes / 4});
    const MemoryStats during = alloc.stats();
    EXPECT_EQ(during.num_os_allocs, before.num_os_allocs);  // reused, no new mapping
    EXPECT_EQ(during.total_allocated_bytes - before.total_allocated_bytes, bytes);
    EXPECT_EQ(during.reserved_bytes, before.reserved_bytes);
  }
  EXPECT_EQ(alloc.stats().total_allocated_bytes, before.total_allocated_bytes);
  EXPECT_GE(alloc.stats().cached_bytes, bytes);
  alloc.empty_cache();
  EXPECT_EQ(alloc.stats().cached_bytes, 0);
}

TEST(Allocator, CategoriesAndPeaks) {
  accounting::MemoryTracker tracker;
  Tensor w = empty({1024});
  accounting::set_memory_category(w, MemoryCategory::Parameters);
  EXPECT_EQ(tracker.allocated_bytes(MemoryCategory::Parameters), 4096);
  { Tensor tmp = empty({1 << 20}); }
  EXPECT_GE(tracker.peak_allocated_bytes(), 4096 + (int64_t{4} << 20));
  EXPECT_EQ(tracker.allocated_since_start(), 4096);
  EXPECT_NE(tracker.report().find("parameters"), std::string::npos);
}
