// Incremental decoding against full recomputation: every position's logits through the KV cache
// (prefill, one token at a time, and blocks after cached positions) equal a forward over the
// whole sequence, and greedy generation gives the same tokens with and without the cache, past
// the context length too, for learned and rotary positions. Sampling's options and determinism;
// the cache's bytes in their own memory category.

#include <gtest/gtest.h>

#include "tally/tally.h"
#include "tests/expect_error.h"

namespace {

using namespace tally;
using tally::test::expect_error;

nn::TransformerConfig small(nn::PositionEncoding positions) {
  nn::TransformerConfig c;
  c.vocab_size = 61;
  c.context_length = 24;
  c.d_model = 32;
  c.num_layers = 2;
  c.num_heads = 4;
  c.positions = positions;
  return c;
}

class Generate : public ::testing::TestWithParam<nn::PositionEncoding> {};

TEST_P(Generate, CachedLogitsEqualAFullForward) {
  Generator g(3);
  nn::TransformerLM model(small(GetParam()), {}, &g);
  model.eval();
  NoGradGuard no_grad;
  const Tensor ids = randint(61, {2, 20}, {}, &g);
  const Tensor full = model.forward(ids);  // [2, 20, 61]
  // Positions 0-6 as a prefill, 7-9 as a block after them (the shifted causal mask), then one at a time.
  nn::KVCache cache = model.make_kv_cache(2, 20);
  std::vector<Tensor> pieces = {model.forward(ids.narrow(1, 0, 7), cache), model.forward(ids.narrow(1, 7, 3), cache)};
  for (int64_t t = 10; t < 20; ++t) pieces.push_back(model.forward(ids.narrow(1, t, 1), cache));
  EXPECT_EQ(cache.length(), 20);
  const Tensor cached = cat(pieces, 1);
  EXPECT_TRUE(allclose(cached, full, 1e-5, 1e-5)) << "largest difference " << (cached - full).abs().max().item<float>();
}

TEST_P(Generate, GreedyTokensAreTheSameWithAndWithoutTheCache) {
  Generator g(5);
  nn::TransformerLM model(small(GetParam()), {}, &g);
  const Tensor prompt = randint(61, {3, 6}, {}, &g);
  nn::GenerationOptions o;
  o.sampling.temperature = 0;
  o.max_new_tokens = 30;  // 36 positions: past the context of 24, so the window slides
  const Tensor cached = model.generate(prompt, o);
  o.use_cache = false;
  const Tensor recomputed = model.generate(prompt, o);
  EXPECT_EQ(cached.sizes(), IntArrayRef({3, 36}));
  EXPECT_TRUE(cached.narrow(1, 0, 6).equal(prompt));
  EXPECT_TRUE(cached.equal(recomputed));
  EXPECT_TRUE(model.is_training()) << "generate restores the training mode";
}

INSTANTIATE_TEST_SUITE_P(Positions, Generate, ::testing::Values(nn::PositionEncoding::Learned, nn::PositionEncoding::Rotary),
                         [](const auto& info) { return info.param == nn::PositionEncoding::Learned ? "Learned" : "Rotary"; });

TEST(Sampling, ASeedGivesTheSameTokensAndTheOptionsNarrowTheChoice) {
  Generator g(8);
  nn::TransformerLM model(small(nn::PositionEncoding::Learned), {}, &g);
  const Tensor prompt = randint(61, {2, 4}, {}, &g);
  nn::GenerationOptions o;
  o.max_new_tokens = 12;
  o.sampling = {0.8, 10, 0.9};
  Generator a(1), b(1);
  EXPECT_TRUE(model.generate(prompt, o, &a).equal(model.generate(prompt, o, &b)));
  // top_k = 1, or a nucleus smaller than any token, leaves the greedy choice.
  nn::GenerationOptions greedy = o;
  greedy.sampling = {0, 0, 1};
  const Tensor want = model.generate(prompt, greedy);
  for (nn::SamplingOptions s : {nn::SamplingOptions{1.0, 1, 1.0}, nn::SamplingOptions{1.5, 0, 1e-6}}) {
    o.sampling = s;
    EXPECT_TRUE(model.generate(prompt, o, &a).equal(want));
  }
}

TEST(Sampling, TopKAndTopPDrawOnlyFromWhatTheyKeep) {
  // Logits log([1, 2, 3, 4]): top_k 2 keeps tokens 2 and 3 (3 : 4); top_p 0.5 keeps 3 and 2
  // (0.4 + 0.3 ≥ 0.5), again 3 : 4; temperature 1 leaves the probabilities as they are.
  const Tensor logits = tensor({1.0, 2.0, 3.0, 4.0}).log().view({1, 4}).expand({20000, 4});
  Generator g(2);
  for (nn::SamplingOptions s : {nn::SamplingOptions{1.0, 2, 1.0}, nn::SamplingOptions{1.0, 0, 0.5}}) {
    const Tensor drawn = nn::sample_next_token(logits, s, &g);
    ASSERT_EQ(drawn.sizes(), IntArrayRef({20000, 1}));
    EXPECT_EQ((drawn < 2).sum().item<int64_t>(), 0);
    const double threes = static_cast<double>((drawn == 3).sum().item<int64_t>()) / 20000;
    EXPECT_NEAR(threes, 4.0 / 7.0, 0.02);
  }
  expect_error<ValueError>([&] { nn::sample_next_token(logits, {-1.0, 0, 1.0}, &g); }, {"temperature must be 0 (greedy) or positive"});
  expect_error<ValueError>([&] { nn::sample_next_token(logits, {1.0, 0, 0.0}, &g); }, {"top_p must be in (0, 1], got 0"});
}

TEST(KVCache, HoldsItsBytesInItsOwnCategoryAndRefusesWhatDoesNotFit) {
  nn::TransformerLM model(small(nn::PositionEncoding::Learned));
  accounting::MemoryTracker tracker;
  {
    nn::KVCache cache = model.make_kv_cache(3, 16);
    // 2 (keys, values) · 2 layers · 3 sequences · 16 positions · 32 features · 4 bytes.
    EXPECT_EQ(cache.nbytes(), 2 * 2 * 3 * 16 * 32 * 4);
    EXPECT_EQ(tracker.allocated_bytes(MemoryCategory::KVCache), cache.nbytes());
    NoGradGuard no_grad;
    model.forward(zeros({3, 10}, TensorOptions(kInt64)), cache);
    expect_error<ValueError>([&] { model.forward(zeros({3, 7}, TensorOptions(kInt64)), cache); },
                             {"positions 10 to 17 do not fit the cache (capacity 16)"});
    expect_error<ValueError>([&] { model.forward(zeros({2, 1}, TensorOptions(kInt64)), cache); }, {"the cache's batch 3"});
  }
  EXPECT_EQ(tracker.allocated_bytes(MemoryCategory::KVCache), 0);
  // `tally estimate transformer`'s figure is the cache's size, for the model's context at batch 3.
  const accounting::TransformerConfig napkin{2, 32, 4, 61, 24, 3};
  EXPECT_EQ(accounting::transformer(napkin, accounting::recipe("fp32-adamw")).kv_cache_bytes.value,
            static_cast<double>(model.make_kv_cache(3, 24).nbytes()));
  expect_error<ValueError>([&] { model.make_kv_cache(1, 25); }, {"a KV cache of 25 positions", "context_length = 24"});
  expect_error<ValueError>([&] { model.generate(zeros({2, 3}), {}); }, {"expected a prompt of int64 token ids"});
}

}  // namespace
