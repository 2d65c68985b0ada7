// The FLOPs scaled_dot_product_attention declares are the products each CPU path runs. Under a
// causal mask the blocked products (float32 here) cover whole blocks of 64 query rows; the fused
// bfloat16 kernel, where the CPU runs it, only the strips of 6 query rows (and, for dk and dv, of
// 6 keys) that see anything. The per-matrix counts at T = 256 were worked out apart from the
// code: blocks 64·(64 + 128 + 192 + 256) = 40,960 scores of 65,536; strips Σ rows × (keys up to
// the strip's last row) = 33,520, and for the key strips Σ keys × (rows at or below the strip's
// first key) = 33,516.

#include <gtest/gtest.h>

#include <string>

#include "tally/tally.h"

namespace tally {
namespace {

using accounting::Phase;

struct Counted {
  int64_t forward, backward;
};

Counted attention_flops(Dtype dt, int64_t heads, int64_t T, int64_t E) {
  Generator g(7);
  Tensor q = randn({1, heads, T, E}, {}, &g).to(dt).requires_grad_(), k = randn({1, heads, T, E}, {}, &g).to(dt).requires_grad_(),
         v = randn({1, heads, T, E}, {}, &g).to(dt).requires_grad_();
  accounting::FlopCounter counter;
  scaled_dot_product_attention(q, k, v, true).sum().backward();
  return {counter.op("scaled_dot_product_attention", Phase::Forward).flops,
          counter.op("scaled_dot_product_attention_backward", Phase::Backward).flops};
}

/// Forward: q kᵀ and P v over the scores, softmax's 6 FLOPs per score. Backward: q kᵀ again, dP
/// and dq over the scores, dk and dv over the key strips, softmax again and its gradient (11).
Counted expected(int64_t heads, int64_t E, int64_t scores, int64_t key_strips) {
  const int64_t a = heads * scores, a2 = heads * key_strips;
  return {2 * a * 2 * E + 6 * a, 2 * a * 3 * E + 2 * a2 * 2 * E + 11 * a};
}

TEST(AttentionFlops, BlockedProductsCountWholeCausalBlocks) {
  const Counted got = attention_flops(kFloat32, 2, 256, 64);
  const Counted want = expected(2, 64, 40960, 40960);
  EXPECT_EQ(got.forward, want.forward);
  EXPECT_EQ(got.backward, want.backward);
}

TEST(AttentionFlops, Bf16CountsTheStripsWhereTheFusedKernelRuns) {
  // Elsewhere (a CPU without AVX512_BF16, a narrower kernel set forced) bfloat16 takes the
  // blocked products.
  const bool fused = attention_paths()[0].second.find("fused AVX512_BF16 kernel") == 0;
  const Counted got = attention_flops(kBFloat16, 2, 256, 64);
  const Counted want = fused ? expected(2, 64, 33520, 33516) : expected(2, 64, 40960, 40960);
  EXPECT_EQ(got.forward, want.forward);
  EXPECT_EQ(got.backward, want.backward);
  // Without a mask every path covers all the scores.
  Generator g(7);
  Tensor q = randn({1, 1, 100, 8}, {}, &g).to(kBFloat16);
  accounting::FlopCounter counter;
  scaled_dot_product_attention(q, q, q, false);
  EXPECT_EQ(counter.op("scaled_dot_product_attention", Phase::Forward).flops, 2 * 100 * 100 * 16 + 6 * 100 * 100);
}

}  // namespace
}  // namespace tally
