// The lecture's tensor_einops sections, each checked against the tally composition it replaces.

#include "einops/common.h"

using namespace tally;
using einops_test::expect_close;

TEST(EinopsLecture, EinsumEqualsMatmulWithTranspose) {
  // x: "batch seq1 hidden", y: "batch seq2 hidden"; the lecture uses ones, random values check more.
  Tensor x = randn({2, 3, 4}), y = randn({2, 3, 4});
  Tensor old_way = x.matmul(y.transpose(-2, -1));
  Tensor z = einops::einsum(x, y, "batch seq1 hidden, batch seq2 hidden -> batch seq1 seq2");
  expect_close(z, old_way, 1e-6, 1e-6);
  Tensor ones_z = einops::einsum(ones({2, 3, 4}), ones({2, 3, 4}), "batch seq1 hidden, batch seq2 hidden -> batch seq1 seq2");
  EXPECT_TRUE(ones_z.equal(full({2, 3, 3}, 4.0f)));
}

TEST(EinopsLecture, EllipsisFormGivesTheSame) {
  Tensor x = randn({2, 3, 4}), y = randn({2, 3, 4});
  Tensor named = einops::einsum(x, y, "batch seq1 hidden, batch seq2 hidden -> batch seq1 seq2");
  Tensor dotted = einops::einsum(x, y, "... seq1 hidden, ... seq2 hidden -> ... seq1 seq2");
  EXPECT_TRUE(dotted.equal(named));
}

TEST(EinopsLecture, ReduceSumsTheLastDim) {
  Tensor x = randn({2, 3, 4});
  Tensor y = einops::reduce(x, "... hidden -> ...", "sum");
  EXPECT_TRUE(y.equal(x.sum({-1})));
  Tensor ones_y = einops::reduce(ones({2, 3, 4}), "... hidden -> ...", "sum");
  EXPECT_TRUE(ones_y.equal(full({2, 3}, 4.0f)));
}

TEST(EinopsLecture, HeadsRearrangeEinsumRearrangeBack) {
  // x: "batch seq total_hidden" = (2, 3, 8); w: "hidden1 hidden2" = (4, 4).
  Tensor x = randn({2, 3, 8}), w = randn({4, 4});
  Tensor split = einops::rearrange(x, "... (heads hidden1) -> ... heads hidden1", {{"heads", 2}});
  EXPECT_EQ(split.sizes().vec(), (std::vector<int64_t>{2, 3, 2, 4}));
  EXPECT_TRUE(split.is_same_storage(x)) << "splitting a contiguous last dim must be a view";
  Tensor mixed = einops::einsum(split, w, "... hidden1, hidden1 hidden2 -> ... hidden2");
  Tensor merged = einops::rearrange(mixed, "... heads hidden2 -> ... (heads hidden2)");
  EXPECT_EQ(merged.sizes().vec(), (std::vector<int64_t>{2, 3, 8}));

  Tensor want = x.reshape({2, 3, 2, 4}).matmul(w).reshape({2, 3, 8});
  expect_close(merged, want, 1e-6, 1e-6);
}
