// The meta device against the real thing: one training step of the GPT-2-style nn::TransformerLM (forward, loss,
// backward) on meta tensors must put on the ledger exactly the FLOPs and bytes of the same step
// on the CPU, and predict exactly the CPU run's peak memory by category; and it sizes a
// 1.3B-parameter model without allocating it (its speed is shown by `tally estimate transformer`,
// which prints the meta step's time: speed is checked by benchmarks, not timed unit tests).

#include <gtest/gtest.h>

#include "tally/tally.h"

using namespace tally;
using accounting::Phase;

namespace {

struct StepRecord {
  std::map<std::pair<std::string, Phase>, accounting::OpTotals> ledger;
  std::array<int64_t, kNumMemoryCategories> peak{};
  int64_t peak_total = 0;
  std::array<int64_t, kNumMemoryCategories> after_forward{};
  int64_t parameters = 0;
};

/// One step of `config` on `device`: parameters made, loss computed, backward run.
StepRecord train_step(const accounting::TransformerConfig& config, Device device) {
  StepRecord r;
  accounting::MemoryTracker tracker(device);
  accounting::FlopCounter counter;
  Generator gen(7);
  nn::TransformerLM model(nn::gpt2_config(config), TensorOptions(kFloat32).device(device), &gen);
  Tensor tokens = randint(config.vocab, {config.batch, config.seq_len}, TensorOptions(kInt64).device(device), &gen);
  Tensor targets = randint(config.vocab, {config.batch, config.seq_len}, TensorOptions(kInt64).device(device), &gen);
  Tensor loss = model.loss(tokens, targets);
  for (int c = 0; c < kNumMemoryCategories; ++c) r.after_forward[c] = tracker.allocated_bytes(static_cast<MemoryCategory>(c));
  loss.backward();
  for (int c = 0; c < kNumMemoryCategories; ++c) r.peak[c] = tracker.peak_allocated_bytes(static_cast<MemoryCategory>(c));
  r.peak_total = tracker.peak_allocated_bytes();
  r.ledger = counter.by_op();
  r.parameters = model.num_parameters();
  return r;
}

constexpr accounting::TransformerConfig kSmall{2, 32, 4, 50, 16, 2, true};

}  // namespace

TEST(TransformerMeta, LedgerEqualsTheRealRunRowByRow) {
  const StepRecord real = train_step(kSmall, kCPU);
  const StepRecord meta = train_step(kSmall, kMeta);
  for (const auto& [key, totals] : meta.ledger) EXPECT_TRUE(real.ledger.contains(key)) << key.first << " only on meta";
  for (const auto& [key, totals] : real.ledger) {
    SCOPED_TRACE(key.first + " " + accounting::phase_name(key.second));
    ASSERT_TRUE(meta.ledger.contains(key));
    const accounting::OpTotals& m = meta.ledger.at(key);
    EXPECT_EQ(m.calls, totals.calls);
    EXPECT_EQ(m.flops, totals.flops);
    EXPECT_EQ(m.bytes_read, totals.bytes_read);
    EXPECT_EQ(m.bytes_written, totals.bytes_written);
    EXPECT_EQ(m.seconds, 0.0);  // nothing ran
  }
  EXPECT_GT(real.ledger.at({"matmul", Phase::Backward}).flops, 0);
}

TEST(TransformerMeta, PredictsThePeakMemoryByCategoryExactly) {
  const StepRecord real = train_step(kSmall, kCPU);
  const StepRecord meta = train_step(kSmall, kMeta);
  for (int c = 0; c < kNumMemoryCategories; ++c) {
    SCOPED_TRACE(memory_category_name(static_cast<MemoryCategory>(c)));
    EXPECT_EQ(meta.peak[c], real.peak[c]);
    EXPECT_EQ(meta.after_forward[c], real.after_forward[c]);
  }
  EXPECT_EQ(meta.peak_total, real.peak_total);
  // The parameters are on the books as parameters, the graph's tensors as activations.
  EXPECT_EQ(real.after_forward[static_cast<int>(MemoryCategory::Parameters)], real.parameters * 4);
  EXPECT_GT(real.after_forward[static_cast<int>(MemoryCategory::Activations)], 0);
  EXPECT_GT(real.peak[static_cast<int>(MemoryCategory::Gradients)], 0);
}

TEST(TransformerMeta, MatchesTheEstimateFormula) {
  // The napkin formula and the real model on meta tensors agree exactly on parameters and on
  // training matmul FLOPs; attention's follow its causal blocks.
  const accounting::TransformerConfig config{24, 2048, 16, 50257, 2048, 1, true};  // GPT-3 XL, 1.3B
  const StepRecord meta = train_step(config, kMeta);
  const auto est = accounting::transformer(config, accounting::recipe("fp32-adamw"));
  EXPECT_EQ(static_cast<double>(meta.parameters), est.params.value);
  EXPECT_GT(meta.parameters, 1'300'000'000);
  // The linear layers' products are addmm forward, which adds the biases too: d·(3 + 1 + 4 + 1) per
  // token and layer.
  const int64_t bias_adds = config.batch * config.seq_len * config.layers * 9 * config.d_model;
  const int64_t matmul = meta.ledger.at({"matmul", Phase::Forward}).flops + meta.ledger.at({"addmm", Phase::Forward}).flops - bias_adds +
                         meta.ledger.at({"matmul", Phase::Backward}).flops;
  EXPECT_EQ(static_cast<double>(matmul), est.matmul_flops_per_token.value * static_cast<double>(config.batch * config.seq_len));
  // Attention, one op, runs causal blocks of 64 query rows: block i meets 64·(i + 1) keys, so at
  // T = 2048 each head computes 64·64·(1 + … + 32) of the T² scores (51.6%); forward, the two
  // products (2·dh FLOPs per score each) and the scaled softmax (6 per score).
  const int64_t blocks = config.seq_len / 64, per_head = 64 * 64 * blocks * (blocks + 1) / 2, dh = config.d_model / config.heads;
  const int64_t scores = config.layers * config.batch * config.heads * per_head;
  EXPECT_EQ(meta.ledger.at({"scaled_dot_product_attention", Phase::Forward}).flops, scores * (4 * dh + 6));
  EXPECT_LT(static_cast<double>(scores * 4 * dh * 3), est.attention_flops_per_token.value * static_cast<double>(config.batch * config.seq_len));
  EXPECT_EQ(meta.peak[static_cast<int>(MemoryCategory::Parameters)], meta.parameters * 4);
}

TEST(TransformerMeta, MetaTensorsRefuseToBeRead) {
  Tensor m = ones({2, 3}, kMeta);
  EXPECT_EQ(m.device(), Device(kMeta));
  EXPECT_EQ(m.to_string(), "tensor(..., device='meta', size=(2, 3))");
  EXPECT_THROW(ones({1}, kMeta).item(), NotImplementedError);
  EXPECT_THROW(m.cpu(), NotImplementedError);
  EXPECT_THROW(m + ones({2, 3}), DeviceError);
  EXPECT_EQ((m * 2 + 1).sizes(), IntArrayRef({2, 3}));  // wrapped numbers join, as on any device
  EXPECT_EQ(Device("meta"), Device(kMeta));
  // Factories whose values are computed on the host compute nothing for a meta tensor.
  const int64_t cpu_before = CpuAllocator::get().stats().total_allocated_bytes;
  Tensor big = arange(int64_t{1} << 32, TensorOptions(kInt64).device(kMeta));
  EXPECT_EQ(big.sizes(), IntArrayRef({int64_t{1} << 32}));
  EXPECT_EQ(CpuAllocator::get().stats().total_allocated_bytes, cpu_before);
}
