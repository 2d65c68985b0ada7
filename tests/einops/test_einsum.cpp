// einsum lowering: one matmul per contraction (seen by the ledger), sums for lone labels,
// broadcasting "...", greedy pairwise order for three operands, strided and bf16 inputs.

#include "einops/common.h"

using namespace tally;
using einops_test::expect_close;
using einops_test::OpRecorder;

TEST(Einsum, TheLedgerSeesOneMatmulWithItsFlops) {
  Tensor x = randn({4, 16, 8}), y = randn({4, 12, 8});
  OpRecorder rec;
  Tensor z = einops::einsum(x, y, "b s h, b t h -> b s t");
  EXPECT_EQ(rec.count("matmul"), 1);
  EXPECT_EQ(rec.flops("matmul"), 2 * 4 * 16 * 12 * 8);
  for (const auto& [name, cost] : rec.ops) {
    if (name != "matmul") {
      EXPECT_EQ(cost.flops, 0) << name << " should be a view";
    }
  }
  EXPECT_EQ(z.sizes().vec(), (std::vector<int64_t>{4, 16, 12}));
}

TEST(Einsum, SingleOperandTransposeIsAViewAndSumsReduce) {
  Tensor x = randn({3, 5});
  Tensor t = einops::einsum(x, "rows cols -> cols rows");
  EXPECT_TRUE(t.is_same_storage(x));
  EXPECT_TRUE(t.equal(x.t()));
  expect_close(einops::einsum(x, "rows cols -> rows"), x.sum({1}), 1e-6, 1e-6);
  Tensor total = einops::einsum(x, "rows cols ->");
  EXPECT_EQ(total.dim(), 0);
  expect_close(total, x.sum(), 1e-5, 1e-5);
}

TEST(Einsum, MatrixProductsAndOuterProducts) {
  Tensor a = randn({3, 4}), b = randn({4, 5}), u = randn({3}), v = randn({5});
  expect_close(einops::einsum(a, b, "i j, j k -> i k"), matmul(a, b), 1e-5, 1e-5);
  expect_close(einops::einsum(a, b, "i j, j k -> k i"), matmul(a, b).t(), 1e-5, 1e-5);
  expect_close(einops::einsum(u, v, "i, j -> i j"), u.unsqueeze(1) * v.unsqueeze(0), 1e-6, 1e-6);
  expect_close(einops::einsum(a, u, "i j, i -> j"), matmul(u, a), 1e-5, 1e-5);
  expect_close(einops::einsum(u, u, "i, i ->"), (u * u).sum(), 1e-5, 1e-5);
}

TEST(Einsum, LabelsInOnlyOneOperandAreSummedFirst) {
  Tensor a = randn({3, 4}), c = randn({6});
  OpRecorder rec;
  Tensor got = einops::einsum(a, c, "a b, c -> a");
  EXPECT_EQ(rec.count("matmul"), 1);
  expect_close(got, a.sum({1}) * c.sum(), 1e-5, 1e-5);
}

TEST(Einsum, EllipsisBroadcastsSizeOneAndMissingDims) {
  Tensor a = randn({1, 3, 2, 4}), b = randn({5, 1, 4, 2});
  expect_close(einops::einsum(a, b, "... i j, ... j k -> ... i k"), matmul(a, b), 1e-5, 1e-5);
  Tensor w = randn({4, 6});
  expect_close(einops::einsum(a, w, "... j, j k -> ... k"), matmul(a, w), 1e-5, 1e-5);
  // "..." left out of the output is summed, as torch.einsum does.
  expect_close(einops::einsum(a, w, "... j, j k -> k"), matmul(a, w).sum({0, 1, 2}), 1e-4, 1e-4);
}

// torch.einsum's answers (which einops.einsum calls): a named dimension of size 1 broadcasts too
// (it was refused), and a size 0 under "..." against a size 1 gives 0 (it failed inside expand).
TEST(Einsum, NamedSizeOneBroadcastsAndZeroMeetsOne) {
  Tensor a = randn({2, 1}), b = randn({3, 2});
  expect_close(einops::einsum(a, b, "i j, j k -> i k"), matmul(a.expand({2, 3}), b), 1e-5, 1e-5);
  Tensor batched = randn({1, 2, 3}), many = randn({4, 3, 2});
  expect_close(einops::einsum(batched, many, "b i j, b j k -> b i k"), matmul(batched.expand({4, 2, 3}), many), 1e-5, 1e-5);
  Tensor c = randn({2, 3}), row = randn({1, 2});
  expect_close(einops::einsum(c, row, "i j, j k -> i k"), matmul(c, row.expand({3, 2})), 1e-5, 1e-5);
  EXPECT_EQ(einops::einsum(zeros({0, 3}), ones({1, 3}), "... a, ... a -> ...").sizes(), IntArrayRef({0}));
  EXPECT_EQ(einops::einsum(ones({1, 3}), zeros({0, 3}), "... a, ... a -> ...").sizes(), IntArrayRef({0}));
  EXPECT_EQ(einops::einsum(zeros({2, 0, 3}), zeros({1, 3}), "... a, ... a -> ...").sizes(), IntArrayRef({2, 0}));
}

TEST(Einsum, ThreeOperandsContractCheapestPairFirst) {
  // (2×50)(50×50)(50×2): A·B and C·D each cost 2·2·50·50 FLOPs, B·C costs 2·50·50·50.
  Tensor a = randn({2, 50}), b = randn({50, 50}), c = randn({50, 2});
  OpRecorder rec;
  Tensor got = einops::einsum(a, b, c, "i j, j k, k l -> i l");
  EXPECT_EQ(rec.count("matmul"), 2);
  EXPECT_EQ(rec.flops("matmul"), 2 * 2 * 50 * 50 + 2 * 2 * 50 * 2);
  expect_close(got, matmul(matmul(a, b), c), 1e-4, 1e-4);
}

TEST(Einsum, ManyOperandsWithSharedBatchAndLaterUse) {
  Tensor a = randn({2, 3, 4}), b = randn({2, 4, 5}), c = randn({2, 5}), d = randn({3});
  Tensor got = einops::einsum(std::vector<Tensor>{a, b, c, d}, "n i j, n j k, n k, i -> n");
  Tensor want = (matmul(matmul(a, b), c.unsqueeze(2)).squeeze(2) * d).sum({1});
  expect_close(got, want, 1e-4, 1e-4);
}

TEST(Einsum, StridedInputsAndMultiLetterNames) {
  Tensor xt = randn({8, 16, 4}).transpose(0, 2);  // (4, 16, 8), non-contiguous
  Tensor y = randn({4, 8, 16}).slice(2, 0, 16, 2);  // (4, 8, 8), stepped
  ASSERT_FALSE(xt.is_contiguous());
  Tensor got = einops::einsum(xt, y, "batch seq hidden, batch hidden out -> batch out seq");
  expect_close(got, matmul(xt, y).transpose(1, 2), 1e-4, 1e-4);
}

TEST(Einsum, Bfloat16RunsAsBfloat16) {
  Tensor x = randn({2, 8, 16}), y = randn({2, 8, 16});
  Tensor got = einops::einsum(x.to(kBFloat16), y.to(kBFloat16), "b s h, b t h -> b s t");
  EXPECT_EQ(got.dtype(), kBFloat16);
  expect_close(got, matmul(x, y.transpose(-2, -1)), 5e-2, 1e-1);
}

TEST(Einsum, ZeroSizedDims) {
  Tensor x = randn({2, 0, 4}), y = randn({2, 3, 4});
  Tensor z = einops::einsum(x, y, "b s h, b t h -> b s t");
  EXPECT_EQ(z.sizes().vec(), (std::vector<int64_t>{2, 0, 3}));
  Tensor e = einops::einsum(randn({3, 0}), randn({0, 2}), "i j, j k -> i k");
  EXPECT_TRUE(e.equal(zeros({3, 2})));
}
