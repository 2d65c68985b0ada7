// CS336 lecture 2, tensor_operations_flops and gradients_flops: the ledger reads the 2 : 4 : 6
// rule off what actually ran.

#include <gtest/gtest.h>

#include "tally/tally.h"

using namespace tally;
using accounting::FlopCounter;
using accounting::Phase;

namespace {
constexpr int64_t B = 1024, D = 256, K = 64;

/// x (B×D) → w1 (D×D) → w2 (D×K) → pow(2).mean(), as in the lecture; returns the counter's view.
void run_two_layer(bool x_requires_grad, FlopCounter& counter) {
  Tensor x = ones({B, D});
  if (x_requires_grad) x.requires_grad_();
  Tensor w1 = randn({D, D}).requires_grad_();
  Tensor w2 = randn({D, K}).requires_grad_();
  Tensor h1 = matmul(x, w1);
  Tensor h2 = matmul(h1, w2);
  Tensor loss = h2.pow(2).mean();
  loss.backward();
  (void)counter;
}
}  // namespace

TEST(LectureFlops, TensorOperationsFlops) {
  Tensor x = ones({B, D}), w = randn({D, K});
  FlopCounter counter;
  Tensor y = matmul(x, w);
  EXPECT_EQ(counter.op("matmul", Phase::Forward).flops, 2 * B * D * K);
  EXPECT_EQ(counter.op("matmul", Phase::Forward).calls, 1);
}

TEST(LectureFlops, BackwardIsTwiceForwardWhenInputNeedsNoGrad) {
  FlopCounter counter;
  run_two_layer(false, counter);
  EXPECT_EQ(counter.op("matmul", Phase::Forward).flops, 2 * B * D * D + 2 * B * D * K);
  // w2.grad and h1.grad (2·B·D·K each), w1.grad (2·B·D·D); no x.grad.
  EXPECT_EQ(counter.op("matmul", Phase::Backward).flops, 4 * B * D * K + 2 * B * D * D);
}

TEST(LectureFlops, BackwardIsTwiceForwardWhenEveryInputNeedsGrad) {
  FlopCounter counter;
  run_two_layer(true, counter);
  EXPECT_EQ(counter.op("matmul", Phase::Forward).flops, 2 * B * D * D + 2 * B * D * K);
  EXPECT_EQ(counter.op("matmul", Phase::Backward).flops, 4 * B * D * K + 4 * B * D * D);
  // Forward + backward of the matmuls: the 6 × data × parameters of the napkin math.
  EXPECT_EQ(counter.op("matmul", Phase::Forward).flops + counter.op("matmul", Phase::Backward).flops,
            6 * B * (D * D + D * K));
}

TEST(Ledger, CountsElementwiseBytesAndModules) {
  Tensor x = ones({8, 16});
  FlopCounter outer;
  {
    FlopCounter inner;
    accounting::ModuleScope block("block");
    {
      accounting::ModuleScope attn("attn");
      EXPECT_EQ(accounting::current_module_path(), "block.attn");
      Tensor y = softmax(x, -1);
    }
    Tensor z = x * 2;
    EXPECT_EQ(inner.op("softmax", Phase::Forward).flops, 5 * 128);
    EXPECT_EQ(inner.op("mul", Phase::Forward).bytes_written, 128 * 4);
    EXPECT_EQ(inner.by_module().at({"block.attn", Phase::Forward}).calls, 1);
    EXPECT_EQ(inner.by_module().at({"block", Phase::Forward}).calls, 1);
    EXPECT_NE(inner.table().find("softmax"), std::string::npos);
    // Against a 100 GFLOP/s, 10 GB/s machine (ridge 10 FLOP/B) softmax (5 FLOP per 8 bytes) is memory-bound.
    const accounting::Roofline roof{100e9, 10e9};
    EXPECT_EQ(roof.ridge_point(), 10.0);
    EXPECT_STREQ(roof.bound(inner.op("softmax", Phase::Forward).arithmetic_intensity()), "memory");
    EXPECT_EQ(roof.roof(1.0), 10e9);
    EXPECT_EQ(roof.roof(1000.0), 100e9);
    EXPECT_NE(inner.table(roof).find("memory"), std::string::npos);
  }
  EXPECT_EQ(accounting::current_module_path(), "");
  EXPECT_EQ(outer.total_flops(Phase::Forward), 5 * 128 + 128);  // the outer counter saw the same ops
}
