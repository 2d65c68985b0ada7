// resize_ and the random fills as Tensor methods (libtorch's resize_, random_, uniform_, normal_).

#include <gtest/gtest.h>

#include <limits>

#include "tally/tally.h"
#include "expect_error.h"

namespace tally {
namespace {

using tally::test::expect_error;

TEST(Resize, ShrinksInPlaceAndGrowsKeepingTheElements) {
  const Tensor x = arange(6, kFloat32).view({2, 3});
  const void* before = x.data_ptr();
  x.resize_({4});  // fits: same storage, first four elements
  EXPECT_EQ(x.sizes(), IntArrayRef({4}));
  EXPECT_EQ(x.data_ptr(), before);
  EXPECT_TRUE(x.equal(arange(4, kFloat32)));
  x.resize_({3, 3});  // 9 > 6 elements: a larger storage starting with the old six
  EXPECT_EQ(x.sizes(), IntArrayRef({3, 3}));
  EXPECT_TRUE(x.is_contiguous());
  EXPECT_TRUE(x.flatten().narrow(0, 0, 6).equal(arange(6, kFloat32)));
  x.resize_({0});
  EXPECT_EQ(x.numel(), 0);
  // A view resized keeps its offset.
  const Tensor base = arange(10, kInt64);
  const Tensor tail = base.narrow(0, 7, 3);
  tail.resize_({2});
  EXPECT_TRUE(tail.equal(tensor({7, 8})));
}

TEST(Resize, Refusals) {
  expect_error<ValueError>([] { ones({3}).requires_grad_().resize_({4}); }, {"cannot resize variables that require grad"});
  expect_error<ValueError>([] { ones({3}).resize_({2, -1}); }, {"Trying to create tensor with negative dimension -1: [2, -1]"});
}

TEST(RandomMethods, RangesAndDtypes) {
  Generator gen(7);
  const Tensor i = empty({2000}, kInt64).random_(-3, 5, &gen);
  EXPECT_EQ(i.min().item<int64_t>(), -3);
  EXPECT_EQ(i.max().item<int64_t>(), 4);
  const Tensor u8 = empty({2000}, kUInt8).random_(&gen);  // [0, 255]
  EXPECT_GE(u8.max().item<int64_t>(), 250);
  const Tensor f = empty({2000}, kFloat32).random_(10, &gen);  // whole numbers in [0, 10)
  EXPECT_TRUE(f.equal(f.floor()));
  EXPECT_EQ(f.max().item<float>(), 9.0f);
  const Tensor b = empty({100}, kBool).random_(&gen);
  EXPECT_TRUE(b.any().item<bool>() && !b.all().item<bool>());
  // The same seed gives the same numbers, as a method and as randint.
  Generator g1(3), g2(3);
  EXPECT_TRUE(empty({50}, kInt64).random_(0, 100, &g1).equal(randint(0, 100, {50}, kInt64, &g2)));
  expect_error<ValueError>([&] { empty({3}, kUInt8).random_(0, 300, &gen); }, {"to - 1 is out of bounds for uint8"});
  expect_error<ValueError>([&] { empty({3}).random_(5, 5, &gen); }, {"random_ expects 'from' to be less than 'to'"});
}

TEST(RandomMethods, UniformAndNormal) {
  Generator gen(11);
  const Tensor u = empty({4000}, kFloat64).uniform_(-2, 3, &gen);
  EXPECT_GE(u.min().item<double>(), -2.0);
  EXPECT_LT(u.max().item<double>(), 3.0);
  EXPECT_NEAR(u.mean().item<double>(), 0.5, 0.1);
  const Tensor n = empty({4000}, kFloat64).normal_(1, 2, &gen);
  EXPECT_NEAR(n.mean().item<double>(), 1.0, 0.15);
  EXPECT_NEAR(n.std().item<double>(), 2.0, 0.15);
  expect_error<TypeError>([&] { empty({3}, kInt64).uniform_(0, 1, &gen); }, {"not implemented for 'int64'"});
  // In a graph they are in-place ops, refused on a leaf that requires grad, as PyTorch's.
  expect_error<ValueError>([&] { ones({3}).requires_grad_().uniform_(0, 1, &gen); }, {"in-place operation"});
}

}  // namespace
}  // namespace tally

namespace tally {
namespace {

TEST(StorageHandle, AsLibtorchSpellsIt) {
  const Tensor x = zeros({2, 3}, kFloat64);
  const Storage s = x.storage();
  EXPECT_EQ(s.nbytes(), 48);
  EXPECT_EQ(s.data(), x.data_ptr());
  EXPECT_EQ(s.device(), Device(kCPU));
  const Tensor v = x.t();
  EXPECT_TRUE(v.storage() == s) << "a view shares its base's storage";
  EXPECT_EQ(v.storage().data(), x.storage().data());
  EXPECT_FALSE(x.clone().storage() == s);
  EXPECT_FALSE(static_cast<bool>(Tensor().defined() ? Storage() : Storage()));
  EXPECT_EQ(s->nbytes(), 48) << "-> reaches the rest of StorageImpl";
}

}  // namespace
}  // namespace tally
