// The napkin math meets the ledger: the GPT-2-style transformer built from tally ops
// (nn::TransformerLM in its GPT-2 configuration) is trained for one step, and the matmul FLOPs the ledger recorded (forward +
// backward) equal exactly what `tally estimate transformer` predicts for the weight matmuls, and
// the attention op's FLOPs its attention term at this T (one causal block: the full T×T scores).

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
  // The weight matmuls: the ledger's matmul rows, and forward the linear layers' addmm rows, which
  // add their biases too (one add per output element of each: d·(3 + 1 + 4 + 1) per token and
  // layer, the head has none).
  const int64_t bias_adds = tokens_per_step * nn::linear_bias_adds_per_row(model);
  EXPECT_EQ(bias_adds, tokens_per_step * config.layers * 9 * config.d_model);
  const int64_t forward = counter.op("matmul", Phase::Forward).flops + counter.op("addmm", Phase::Forward).flops - bias_adds;
  const int64_t ledger = forward + counter.op("matmul", Phase::Backward).flops;
  EXPECT_EQ(static_cast<double>(ledger), est.matmul_flops_per_token.value * tokens_per_step);
  // Backward matmuls cost exactly twice the forward ones: every matmul input needs a gradient.
  EXPECT_EQ(counter.op("matmul", Phase::Backward).flops, 2 * forward);
  EXPECT_EQ(counter.op("addmm", Phase::Forward).calls, 4 * config.layers);
  // Attention is one op. At T = 16 its causal blocks (64 query rows) are one block over all T×T
  // scores, so its products are the estimate's full ones: QKᵀ and P·V forward (a third of the
  // training term), and backward the scores again, dP, dq, dk and dv (five halves of the forward).
  // Besides them, its softmax: 6 FLOPs per score forward (scale, max, subtract, exp, sum,
  // divide), and backward 6 more for the recomputed one and 5 for its gradient.
  const double products = est.attention_flops_per_token.value * tokens_per_step / 3;
  const double scores = static_cast<double>(config.layers * config.batch * config.heads * config.seq_len * config.seq_len);
  EXPECT_EQ(static_cast<double>(counter.op("scaled_dot_product_attention", Phase::Forward).flops), products + 6 * scores);
  EXPECT_EQ(static_cast<double>(counter.op("scaled_dot_product_attention_backward", Phase::Backward).flops), 2.5 * products + 11 * scores);
  // The parameter count the estimate uses is the number of elements the model created.
  EXPECT_EQ(static_cast<double>(model.num_parameters()), est.params.value);
  for (const Tensor& p : model.parameters()) EXPECT_TRUE(p.grad().defined());
}
