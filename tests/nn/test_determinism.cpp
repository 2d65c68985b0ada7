// The same seed and thread count give bit-identical training: every random number (init, dropout,
// batches) comes from tally generators, and every kernel reduces in a fixed order.

#include <gtest/gtest.h>

#include "tally/tally.h"

namespace tally {
namespace {

struct TrainingRun {
  std::vector<float> losses;
  StateDict final_state;
};

/// `steps` AdamW steps of the small GPT's architecture (vocab 256, d 256, 4 layers, 4 heads),
/// with dropout on, at a shorter context and batch so the test stays quick.
TrainingRun train(uint64_t seed, int64_t steps) {
  const nn::TransformerConfig config{.vocab_size = 256, .context_length = 32, .d_model = 256, .num_layers = 4, .num_heads = 4,
                                     .dropout = 0.1};
  Generator gen(seed);
  nn::TransformerLM model(config, {}, &gen);
  optim::AdamW optimizer(model.parameters(), optim::AdamWOptions(1e-3));
  TrainingRun run;
  for (int64_t t = 0; t < steps; ++t) {
    Tensor ids = randint(256, {4, 33}, TensorOptions(kInt64), &gen);
    Tensor loss = model.loss(ids.narrow(1, 0, 32), ids.narrow(1, 1, 32));
    loss.backward();
    optimizer.step();
    optimizer.zero_grad();
    run.losses.push_back(loss.item<float>());
  }
  for (const auto& [name, t] : model.state_dict()) run.final_state.insert(name, t.clone());
  return run;
}

TEST(Determinism, TwoRunsWithOneSeedAreBitIdentical) {
  const TrainingRun a = train(42, 50), b = train(42, 50);
  ASSERT_EQ(a.losses.size(), 50u);
  for (size_t i = 0; i < a.losses.size(); ++i) EXPECT_EQ(a.losses[i], b.losses[i]) << "step " << i;
  for (const auto& [name, t] : a.final_state) EXPECT_TRUE(t.equal(b.final_state.at(name))) << name;
  EXPECT_LT(a.losses.back(), a.losses.front());
  const TrainingRun c = train(43, 2);
  EXPECT_NE(c.losses[0], a.losses[0]);  // another seed, another run
}

}  // namespace
}  // namespace tally
