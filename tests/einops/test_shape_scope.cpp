// Enforced shape names: the first tensor binds each name, later tensors must agree.

#include "einops/common.h"

using namespace tally;
using einops_test::expect_value_error;

TEST(ShapeScope, BindsOnFirstUseAndChecksLaterTensors) {
  einops::ShapeScope shapes;
  Tensor x = randn({4, 32, 8}), w = randn({8, 16}), y = randn({4, 16, 8});
  EXPECT_TRUE(shapes.check(x, "batch seq hidden", "x").is_same(x));
  shapes.check(w, "hidden out", "w");
  EXPECT_EQ(shapes.size("seq"), 32);
  EXPECT_EQ(shapes.size("out"), 16);
  EXPECT_FALSE(shapes.size("heads").has_value());
  expect_value_error([&] { shapes.check(y, "batch seq hidden", "y"); },
                     {"shape pattern \"batch seq hidden\"", "dimension 'seq' is 16 for tensor y but was bound to 32 by tensor x",
                      "y has shape [4, 16, 8]"});
}

TEST(ShapeScope, UnnamedTensorsAreNumbered) {
  einops::ShapeScope shapes;
  shapes.check(randn({2, 3}), "a b");
  expect_value_error([&] { shapes.check(randn({2, 4}), "a b"); }, {"'b' is 4 for tensor #2 but was bound to 3 by tensor #1"});
}

TEST(ShapeScope, EllipsisNumbersAndRank) {
  einops::ShapeScope shapes;
  shapes.check(randn({5, 6, 7, 3}), "... channels 3", "img");
  EXPECT_EQ(shapes.size("channels"), 7);
  shapes.check(randn({7}), "... channels", "bias");
  expect_value_error([&] { shapes.check(randn({2, 7, 4}), "... channels 3", "img2"); },
                     {"dimension 2 of tensor img2 (shape [2, 7, 4]) is 4 but must be 3"});
  expect_value_error([&] { shapes.check(randn({2, 3}), "batch seq hidden", "z"); },
                     {"tensor z has shape [2, 3] (2 dimensions) but the shape names 3"});
  expect_value_error([&] { shapes.check(randn({2}), "a b ...", "v"); }, {"names 2 or more"});
  expect_value_error([&] { shapes.check(randn({2}), "(a b)", "v"); }, {"brackets are not allowed in a shape"});
  expect_value_error([&] { shapes.check(randn({2, 2}), "a a", "v"); }, {"duplicate name 'a'"});
}

TEST(ShapeScope, BindUpFrontAndClear) {
  einops::ShapeScope shapes;
  shapes.bind("hidden", 8, "config");
  expect_value_error([&] { shapes.check(randn({2, 4}), "batch hidden", "x"); },
                     {"'hidden' is 4 for tensor x but was bound to 8 by tensor config"});
  shapes.clear();
  shapes.check(randn({2, 4}), "batch hidden", "x");
  EXPECT_EQ(shapes.size("hidden"), 4);
}

TEST(ShapeScope, CheckingIsCheap) {
  // Parsed once: a million checks of a cached spec would take seconds if each one parsed.
  einops::ShapeScope shapes;
  Tensor x = randn({2, 3, 4});
  const auto before = einops::cache_stats();
  for (int i = 0; i < 10000; ++i) shapes.check(x, "batch seq hidden", "x");
  const auto after = einops::cache_stats();
  EXPECT_LE(after.misses - before.misses, 1);
}
