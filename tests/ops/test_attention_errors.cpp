// scaled_dot_product_attention refuses what it cannot compute in its op's meta (the same on the
// meta device as on real tensors), with PyTorch's wording for mixed dtypes; nn::F's form
// broadcasts batch dims first, as matmul does; `tally info` names the path bfloat16 takes.

#include <gtest/gtest.h>

#include <cmath>
#include <tuple>

#include "expect_error.h"
#include "tally/kernels/cpu/attention_bf16.h"
#include "tally/kernels/cpu/attention_f32.h"
#include "tally/kernels/cpu/dispatch.h"
#include "tally/machine/cpu_info.h"
#include "tally/tally.h"

namespace tally {
namespace {

using test::expect_error;

TEST(AttentionErrors, ShapesMustMatch) {
  for (Device d : {Device(kCPU), Device(kMeta)}) {
    const TensorOptions o = TensorOptions().device(d);
    expect_error<ValueError>([&] { scaled_dot_product_attention(empty({2, 5, 4}, o), empty({2, 6, 3}, o), empty({2, 6, 4}, o)); },
                             {"query [2, 5, 4] and key [2, 6, 3] must share E"});
    expect_error<ValueError>([&] { scaled_dot_product_attention(empty({2, 5, 4}, o), empty({2, 6, 4}, o), empty({2, 7, 4}, o)); },
                             {"key and value [2, 7, 4] S"});
    expect_error<ValueError>([&] { scaled_dot_product_attention(empty({2, 5, 4}, o), empty({3, 6, 4}, o), empty({3, 6, 4}, o)); },
                             {"the same batch dims", "query [2, 5, 4], key [3, 6, 4]"});
    expect_error<ValueError>([&] { scaled_dot_product_attention(empty({4}, o), empty({4}, o), empty({4}, o)); },
                             {"must be [..., L, E], [..., S, E] and [..., S, Ev] of one rank", "query [4]"});
    expect_error<ValueError>([&] { nn::F::scaled_dot_product_attention(empty({2, 5, 4}, o), empty({6, 4}, o), empty({6, 4}, o)); },
                             {"of one rank"});
    expect_error<ValueError>([&] { scaled_dot_product_attention_packed(empty({2, 5, 4}, o)); },
                             {"scaled_dot_product_attention_packed: expected qkv of shape [..., T, 3, h, E]", "got [2, 5, 4]"});
    expect_error<ValueError>([&] { scaled_dot_product_attention_packed(empty({2, 5, 2, 3, 4}, o)); },
                             {"expected qkv of shape [..., T, 3, h, E]", "got [2, 5, 2, 3, 4]"});
  }
}

TEST(AttentionErrors, DtypesAndScale) {
  const Tensor x = ones({1, 3, 4});
  expect_error<TypeError>([&] { scaled_dot_product_attention(x, x.to(kFloat64), x); },
                          {"Expected query, key, and value to have the same dtype, but got query.dtype: float32 key.dtype: float64"});
  const Tensor i = ones({1, 3, 4}, TensorOptions(kInt64));
  expect_error<TypeError>([&] { scaled_dot_product_attention(i, i, i); }, {"scaled_dot_product_attention: not implemented for 'int64'"});
  expect_error<ValueError>([&] { scaled_dot_product_attention(x, x, x, false, 0.0); }, {"the scale must be positive and finite, got 0"});
}

TEST(AttentionErrors, StackedFormIsTheSameOp) {
  Generator g(4);
  for (Dtype dt : {kFloat32, kBFloat16}) {
    const Tensor qkv = randn({2, 70, 3, 2, 8}, {}, &g).to(dt);  // [b, T, 3, h, E]
    auto head = [&](int64_t i) { return qkv.select(2, i).transpose(1, 2).contiguous(); };
    const Tensor y = scaled_dot_product_attention_packed(qkv, true);
    EXPECT_EQ(y.sizes(), IntArrayRef({2, 70, 2, 8}));
    // oneDNN may sum float32 in another order for other strides; bfloat16's kernel is exact.
    const Tensor expected = scaled_dot_product_attention(head(0), head(1), head(2), true).transpose(1, 2);
    EXPECT_TRUE(dt == kFloat32 ? y.allclose(expected, 1e-5, 1e-6) : y.equal(expected)) << dtype_name(dt);
  }
}

TEST(AttentionErrors, FunctionalFormBroadcastsBatchDims) {
  Generator g(2);
  for (Dtype dt : {kFloat32, kBFloat16}) {
    const Tensor q = randn({2, 3, 5, 4}, {}, &g).to(dt), k = randn({1, 3, 6, 4}, {}, &g).to(dt),
                 v = randn({6, 4}, {}, &g).to(dt).expand({1, 1, 6, 4});
    const Tensor y = nn::F::scaled_dot_product_attention(q, k, v, std::nullopt, 0.0, true);  // k and v read where they lie
    const Tensor expected =
        scaled_dot_product_attention(q, k.expand({2, 3, 6, 4}).contiguous(), v.expand({2, 3, 6, 4}).contiguous(), true);
    EXPECT_EQ(y.sizes(), IntArrayRef({2, 3, 5, 4}));
    EXPECT_TRUE(y.equal(expected)) << dtype_name(dt);
  }
}

// Operands read and written where they lie, whatever their strides: heads of a projection (two
// batch strides), sliced rows, a transposed last dim (copied first): the same numbers as
// contiguous copies give, on every path.
TEST(AttentionErrors, StridedOperandsGiveTheContiguousResult) {
  Generator g(8);
  for (Dtype dt : {kFloat32, kBFloat16, kFloat64}) {
    const Tensor proj = randn({2, 70, 3, 2, 8}, {}, &g).to(dt);  // [b, T, 3, h, E]
    const Tensor q = proj.select(2, 0).transpose(1, 2), k = randn({2, 2, 8, 90}, {}, &g).to(dt).transpose(-2, -1),
                 v = proj.select(2, 2).transpose(1, 2).narrow(-2, 0, 70);
    const Tensor expected = scaled_dot_product_attention(q.contiguous(), k.narrow(-2, 0, 70).contiguous(), v.contiguous(), true);
    const Tensor y = scaled_dot_product_attention(q, k.narrow(-2, 0, 70), v, true);
    // oneDNN may sum float32 in another order for other strides; the other paths are exact.
    EXPECT_TRUE(dt == kFloat32 ? y.allclose(expected, 1e-5, 1e-6) : y.equal(expected)) << dtype_name(dt);
  }
}

// No keys (an empty sum: zeros), no features (uniform probabilities) and no queries take the
// composed ops' path, forward and backward.
TEST(AttentionErrors, EmptySizesFollowTheComposedOps) {
  Generator g(6);
  for (auto [L, S, E] : {std::tuple<int64_t, int64_t, int64_t>{3, 4, 0}, {3, 0, 4}, {0, 4, 4}}) {
    for (bool causal : {false, true}) {
      Tensor q = randn({2, L, E}, {}, &g).requires_grad_(), k = randn({2, S, E}, {}, &g).requires_grad_(),
             v = randn({2, S, 5}, {}, &g).requires_grad_();
      const Tensor y = scaled_dot_product_attention(q, k, v, causal);
      const double scale = E > 0 ? 1.0 / std::sqrt(static_cast<double>(E)) : 1.0;
      EXPECT_TRUE(y.detach().equal(matmul(attention_softmax(matmul(q.detach(), k.detach().transpose(-2, -1)), scale, causal), v.detach())))
          << L << " " << S << " " << E;
      y.sum().backward();
      // Each query's probabilities sum to 1, so dv's entries sum to queries × Ev (none without keys).
      EXPECT_EQ(v.grad().sum().item<double>(), S == 0 ? 0.0 : static_cast<double>(2 * L * 5));
      EXPECT_EQ(q.grad().sizes(), q.sizes());
      EXPECT_EQ(k.grad().sizes(), k.sizes());
    }
  }
}

// A NaN in one query gives that query's output row NaN and leaves the others finite, on every
// path (float64 the batched products; float32 and bfloat16 the fused kernels where the CPU runs
// them): the fused kernels' e^x once clamped a NaN score to e^-87, a silent 0.
TEST(AttentionNonFinite, ANanQueryGivesItsRowNanAndNoOther) {
  for (Dtype dt : {kFloat64, kFloat32, kBFloat16}) {
    for (bool causal : {false, true}) {
      Generator g(3);
      Tensor q = randn({1, 2, 70, 8}, {}, &g), k = randn({1, 2, 70, 8}, {}, &g), v = randn({1, 2, 70, 8}, {}, &g);
      q.index_put_({0, 1, 5, 3}, std::nan(""));
      const Tensor out = scaled_dot_product_attention(q.to(dt), k.to(dt), v.to(dt), causal).to(kFloat64);
      const Tensor is_nan = out != out;
      EXPECT_TRUE(is_nan.index({0, 1, 5}).all().item<bool>()) << dtype_name(dt) << " causal " << causal;
      EXPECT_EQ(is_nan.sum().item<int64_t>(), 8) << dtype_name(dt) << " causal " << causal;
    }
  }
}

// `tally info` names the fused kernels exactly where the op runs them.
TEST(AttentionPaths, NameTheFusedKernelWhereItRuns) {
  const auto paths = attention_paths();
  ASSERT_EQ(paths.size(), 3u);
  EXPECT_EQ(paths[0].first, "bfloat16");
  const bool fused = machine::cpu_info().avx512_bf16 && kernels::cpu_kernel_set() == "avx512" && kernels::attention_bf16_built();
  EXPECT_EQ(paths[0].second.find("fused AVX512_BF16 kernel") != std::string::npos, fused) << paths[0].second;
  EXPECT_EQ(paths[1].first, "float32");
  const bool fused_f32 = kernels::cpu_kernel_set() == "avx512" && kernels::attention_f32_built();
  EXPECT_EQ(paths[1].second.find("fused AVX-512 kernel") != std::string::npos, fused_f32) << paths[1].second;
}

}  // namespace
}  // namespace tally
