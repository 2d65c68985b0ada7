// Every pattern is parsed once per (pattern, ranks) and reused, from any thread.

#include <thread>

#include "einops/common.h"

using namespace tally;

TEST(EinopsCache, APatternIsParsedOnceAndReused) {
  Tensor x = randn({2, 3, 4}), y = randn({2, 5, 4});
  const auto before = einops::cache_stats();
  Tensor first = einops::einsum(x, y, "cache_b cache_s cache_h, cache_b cache_t cache_h -> cache_b cache_s cache_t");
  for (int i = 0; i < 3; ++i)
    EXPECT_TRUE(einops::einsum(x, y, "cache_b cache_s cache_h, cache_b cache_t cache_h -> cache_b cache_s cache_t").equal(first));
  const auto after = einops::cache_stats();
  EXPECT_EQ(after.misses - before.misses, 1);
  EXPECT_EQ(after.entries - before.entries, 1);
  EXPECT_GE(after.hits - before.hits, 3);
}

TEST(EinopsCache, RankIsPartOfTheKey) {
  const auto before = einops::cache_stats();
  einops::rearrange(randn({2, 3}), "cache_r ... -> ... cache_r");
  einops::rearrange(randn({2, 3, 4}), "cache_r ... -> ... cache_r");
  einops::rearrange(randn({5, 6, 7}), "cache_r ... -> ... cache_r");
  const auto after = einops::cache_stats();
  EXPECT_EQ(after.entries - before.entries, 2);
}

TEST(EinopsCache, ConcurrentCallsShareOnePlan) {
  Tensor x = randn({4, 6});
  const auto before = einops::cache_stats();
  std::vector<std::thread> threads;
  std::atomic<int> wrong{0};
  for (int t = 0; t < 4; ++t)
    threads.emplace_back([&] {
      for (int i = 0; i < 200; ++i)
        if (!einops::rearrange(x, "cache_a (cache_b cache_c) -> cache_c cache_a cache_b", {{"cache_b", 2}})
                 .equal(x.reshape({4, 2, 3}).permute({2, 0, 1})))
          ++wrong;
    });
  for (auto& th : threads) th.join();
  EXPECT_EQ(wrong.load(), 0);
  EXPECT_EQ(einops::cache_stats().entries - before.entries, 1);
}
