// The napkin math meets the ledger: the GPT-2-style transformer built from tally ops
// (nn::TransformerLM in its GPT-2 configuration) is trained for one step, and the matmul FLOPs the ledger recorded (forward +
// backward) equal exactly what `tally estimate transformer` predicts for a masked (full T×T)
// attention implementation.

#include <gtest/gtest.h>

#include "tally/accounting/estimate.h"
#include "tally/tally.h"

using namespace tally;
using accounting::Phase;

TEST(TransformerFlops, LedgerMatchesEstimateExactly) {
  const accounting::TransformerConfig config{2, 32, 4, 50, 16, 2, true};
  Generator g(5);
  nn::TransformerLM model(nn::gpt2_config(config), kFloat32, &g);
  Tensor tokens = randint(config.vocab, {config.batch, config.seq_len}, kInt64, &g);
  Tensor targets = randint(config.vocab, {config.batch, config.seq_len}, kInt64, &g);

  accounting::FlopCounter counter;
  model.loss(tokens, targets).backward();

  const auto est = accounting::transformer(config, accounting::recipe("fp32-adamw"));
  const int64_t tokens_per_step = config.batch * config.seq_len;
  const int64_t ledger = counter.op("matmul", Phase::Forward).flops + counter.op("matmul", Phase::Backward).flops;
  EXPECT_EQ(static_cast<double>(ledger), est.flops_per_token.value * tokens_per_step);
  // Backward matmuls cost exactly twice the forward ones: every matmul input needs a gradient.
  EXPECT_EQ(counter.op("matmul", Phase::Backward).flops, 2 * counter.op("matmul", Phase::Forward).flops);
  // The parameter count the estimate uses is the number of elements the model created.
  EXPECT_EQ(static_cast<double>(model.num_parameters()), est.params.value);
  for (const Tensor& p : model.parameters()) EXPECT_TRUE(p.grad().defined());
}
