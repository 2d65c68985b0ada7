// einops is composed of differentiable tally ops, so its gradients come for free: gradcheck them.

#include <gtest/gtest.h>

#include "tally/einops/einops.h"
#include "tally/tally.h"

using namespace tally;
using autograd::gradcheck;

namespace {
Tensor leaf(std::vector<int64_t> sizes, bool transposed = false) {
  static Generator gen(17);
  Tensor x;
  if (transposed) {
    std::swap(sizes[sizes.size() - 1], sizes[sizes.size() - 2]);
    x = randn(sizes, kFloat64, &gen).transpose(-1, -2).detach();
  } else {
    x = randn(sizes, kFloat64, &gen);
  }
  return x.requires_grad_();
}
}  // namespace

TEST(EinopsGradients, Einsum) {
  auto r = gradcheck([](const TensorList& v) { return einops::einsum(v[0], v[1], "batch seq1 hidden, batch seq2 hidden -> batch seq1 seq2"); },
                     {leaf({2, 3, 4}, true), leaf({2, 5, 4})});
  EXPECT_TRUE(r.ok) << r.message;
  r = gradcheck([](const TensorList& v) { return einops::einsum(v[0], v[1], v[2], "a b, b c, c d -> a d"); },
                {leaf({2, 3}), leaf({3, 4}, true), leaf({4, 2})});
  EXPECT_TRUE(r.ok) << r.message;
}

TEST(EinopsGradients, RearrangeReduceRepeat) {
  auto r = gradcheck([](const TensorList& v) { return einops::rearrange(v[0], "... (heads hidden1) -> ... heads hidden1", {{"heads", 2}}); },
                     {leaf({2, 3, 8}, true)});
  EXPECT_TRUE(r.ok) << r.message;
  r = gradcheck([](const TensorList& v) { return einops::reduce(v[0], "b (h 2) (w 2) c -> b h w c", "mean"); }, {leaf({1, 4, 4, 2})});
  EXPECT_TRUE(r.ok) << r.message;
  r = gradcheck([](const TensorList& v) { return einops::reduce(v[0], "b h w -> b w", "max"); }, {leaf({2, 3, 4}, true)});
  EXPECT_TRUE(r.ok) << r.message;
  r = gradcheck([](const TensorList& v) { return einops::repeat(v[0], "h w -> h w c", {{"c", 3}}); }, {leaf({2, 3})});
  EXPECT_TRUE(r.ok) << r.message;
}
