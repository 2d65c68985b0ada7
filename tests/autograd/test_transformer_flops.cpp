// The napkin math meets the ledger: a GPT-2-style transformer built from tally ops is trained for
// one step, and the matmul FLOPs the ledger recorded (forward + backward) equal exactly what
// `tally estimate transformer` predicts for a masked (full T×T) attention implementation.

#include <gtest/gtest.h>

#include <cmath>

#include "tally/accounting/estimate.h"
#include "tally/tally.h"

using namespace tally;
using accounting::Phase;

namespace {

constexpr int64_t L = 2, d = 32, a = 4, V = 50, T = 16, b = 2, dh = d / a;

Tensor param(std::vector<int64_t> sizes, Generator& g) {
  Tensor t = randn(sizes, kFloat32, &g) * 0.02;
  return t.requires_grad_();
}

/// LayerNorm over the last dim, composed of tally ops.
Tensor layer_norm(const Tensor& x, const Tensor& gain, const Tensor& bias) {
  Tensor mu = x.mean({-1}, true);
  Tensor centered = x - mu;
  Tensor var = square(centered).mean({-1}, true);
  return centered * rsqrt(var + 1e-5) * gain + bias;
}

struct Block {
  Tensor ln1_g, ln1_b, w_qkv, b_qkv, w_proj, b_proj, ln2_g, ln2_b, w_fc, b_fc, w_fc2, b_fc2;
};

}  // namespace

TEST(TransformerFlops, LedgerMatchesEstimateExactly) {
  Generator g(5);
  Tensor wte = param({V, d}, g), wpe = param({T, d}, g);
  std::vector<Block> blocks;
  for (int64_t l = 0; l < L; ++l) {
    blocks.push_back({ones({d}).requires_grad_(), zeros({d}).requires_grad_(), param({d, 3 * d}, g), zeros({3 * d}).requires_grad_(),
                      param({d, d}, g), zeros({d}).requires_grad_(), ones({d}).requires_grad_(), zeros({d}).requires_grad_(),
                      param({d, 4 * d}, g), zeros({4 * d}).requires_grad_(), param({4 * d, d}, g), zeros({d}).requires_grad_()});
  }
  Tensor lnf_g = ones({d}).requires_grad_(), lnf_b = zeros({d}).requires_grad_();
  Tensor tokens = randint(V, {b, T}, kInt64, &g), targets = randint(V, {b, T}, kInt64, &g);
  Tensor causal = ones({T, T}, kBool).triu(1);  // true above the diagonal: masked

  accounting::FlopCounter counter;
  Tensor x = embedding(wte, tokens) + wpe;  // [b, T, d]
  for (const Block& blk : blocks) {
    Tensor h = layer_norm(x, blk.ln1_g, blk.ln1_b);
    Tensor qkv = matmul(h, blk.w_qkv) + blk.b_qkv;  // [b, T, 3d]
    auto heads = [&](int64_t i) { return qkv.narrow(-1, i * d, d).reshape({b, T, a, dh}).permute({0, 2, 1, 3}); };
    Tensor q = heads(0), k = heads(1), v = heads(2);  // [b, a, T, dh]
    Tensor att = matmul(q, k.transpose(-1, -2)) * (1.0 / std::sqrt(static_cast<double>(dh)));  // [b, a, T, T]
    att = softmax(att.masked_fill(causal, -INFINITY), -1);
    Tensor y = matmul(att, v).permute({0, 2, 1, 3}).reshape({b, T, d});
    x = x + (matmul(y, blk.w_proj) + blk.b_proj);
    Tensor m = gelu(matmul(layer_norm(x, blk.ln2_g, blk.ln2_b), blk.w_fc) + blk.b_fc);  // [b, T, 4d]
    x = x + (matmul(m, blk.w_fc2) + blk.b_fc2);
  }
  Tensor logits = matmul(layer_norm(x, lnf_g, lnf_b), wte.t());  // tied output embedding: [b, T, V]
  Tensor onehot = (targets.unsqueeze(-1) == arange(V)).to(kFloat32);
  Tensor loss = -(log_softmax(logits, -1) * onehot).sum() / static_cast<double>(b * T);
  loss.backward();

  const auto est = accounting::transformer({L, d, a, V, T, b, true}, accounting::recipe("fp32-adamw"));
  const int64_t tokens_per_step = b * T;
  const int64_t ledger = counter.op("matmul", Phase::Forward).flops + counter.op("matmul", Phase::Backward).flops;
  EXPECT_EQ(static_cast<double>(ledger), est.flops_per_token.value * tokens_per_step);
  // Backward matmuls cost exactly twice the forward ones: every matmul input needs a gradient.
  EXPECT_EQ(counter.op("matmul", Phase::Backward).flops, 2 * counter.op("matmul", Phase::Forward).flops);
  // The parameter count the estimate uses is the number of elements we created.
  int64_t created = wte.numel() + wpe.numel() + lnf_g.numel() + lnf_b.numel();
  for (const Block& blk : blocks)
    for (const Tensor* t : {&blk.ln1_g, &blk.ln1_b, &blk.w_qkv, &blk.b_qkv, &blk.w_proj, &blk.b_proj, &blk.ln2_g, &blk.ln2_b,
                            &blk.w_fc, &blk.b_fc, &blk.w_fc2, &blk.b_fc2})
      created += t->numel();
  EXPECT_EQ(static_cast<double>(created), est.params.value);
  EXPECT_TRUE(wte.grad().defined());
  EXPECT_TRUE(blocks[0].w_qkv.grad().defined());
}
