// linspace and logspace against PyTorch 1.13: each expected list is what /usr/bin/python3 with
// torch 1.13 prints for the call beside it (tolist()), so these fail if tally drifts from it.

#include <gtest/gtest.h>

#include <vector>

#include "tally/tally.h"
#include "tests/elements.h"
#include "tests/expect_error.h"

namespace {

using namespace tally;
using tally::test::elements;
using tally::test::expect_error;

TEST(Linspace, AsPyTorchComputesIt) {
  // torch.linspace(0, 1, 7): computed from the nearer end, so 1.0 is exact and the halves mirror.
  EXPECT_EQ(elements<float>(linspace(0, 1, 7)),
            (std::vector<float>{0.0f, 0.1666666716337204f, 0.3333333432674408f, 0.5f, 0.6666666269302368f, 0.8333333134651184f, 1.0f}));
  // torch.linspace(-3.3, 10.1, 5)
  EXPECT_EQ(elements<float>(linspace(-3.3, 10.1, 5)),
            (std::vector<float>{-3.299999952316284f, 0.05000019073486328f, 3.4000000953674316f, 6.75f, 10.100000381469727f}));
  // torch.linspace(0, 1, 2**20 + 1)[2**19 + 1]
  EXPECT_EQ(linspace(0, 1, (1 << 20) + 1).index({(1 << 19) + 1}).item<float>(), 0.5000009536743164f);
  // torch.linspace(0, 1, 5, dtype=torch.float64)
  EXPECT_EQ(elements<double>(linspace(0, 1, 5, kFloat64)), (std::vector<double>{0.0, 0.25, 0.5, 0.75, 1.0}));
  // torch.linspace(0, 1, 7, dtype=torch.bfloat16): each operation rounded to bfloat16
  EXPECT_EQ(elements<float>(linspace(0, 1, 7, kBFloat16).to(kFloat32)),
            (std::vector<float>{0.0f, 0.1669921875f, 0.333984375f, 0.5f, 0.6640625f, 0.83203125f, 1.0f}));
  // Integral: torch.linspace(0, 10, 4, dtype=torch.int64), (5, -5, 6, int32), (0.5, 3.7, 4, int64)
  EXPECT_EQ(elements<int64_t>(linspace(0, 10, 4, kInt64)), (std::vector<int64_t>{0, 3, 6, 10}));
  EXPECT_EQ(elements<int32_t>(linspace(5, -5, 6, kInt32)), (std::vector<int32_t>{5, 3, 1, -1, -3, -5}));
  EXPECT_EQ(elements<int64_t>(linspace(0.5, 3.7, 4, kInt64)), (std::vector<int64_t>{0, 1, 2, 3}));
  // torch.linspace(1, 2, 1), torch.linspace(1, 2, 0)
  EXPECT_EQ(elements<float>(linspace(1, 2, 1)), (std::vector<float>{1.0f}));
  EXPECT_EQ(linspace(1, 2, 0).sizes(), IntArrayRef({0}));
  EXPECT_EQ(linspace(0, 1, 3, TensorOptions().device(kMeta)).sizes(), IntArrayRef({3}));
}

TEST(Logspace, AsPyTorchComputesIt) {
  // torch.logspace(-2, 2, 5), torch.logspace(0, 3, 4, base=2)
  EXPECT_EQ(elements<float>(logspace(-2, 2, 5)), (std::vector<float>{0.009999999776482582f, 0.10000000149011612f, 1.0f, 10.0f, 100.0f}));
  EXPECT_EQ(elements<float>(logspace(0, 3, 4, 2)), (std::vector<float>{1.0f, 2.0f, 4.0f, 8.0f}));
  // torch.logspace(0, 1, 3, dtype=torch.float64), torch.logspace(0, 3, 4, base=2, dtype=torch.int64)
  EXPECT_EQ(elements<double>(logspace(0, 1, 3, 10, kFloat64)), (std::vector<double>{1.0, 3.1622776601683795, 10.0}));
  EXPECT_EQ(elements<int64_t>(logspace(0, 3, 4, 2, kInt64)), (std::vector<int64_t>{1, 2, 4, 8}));
  // The base: rounded to a floating dtype, as it is for an integral one. torch.logspace(0, 2, 3,
  // base=3.3), the same in bfloat16, and base=2.5 in int64.
  // (torch's float32 pow is one ulp above the correctly rounded 3.3f², which std::pow gives.)
  const std::vector<float> f = elements<float>(logspace(0, 2, 3, 3.3));
  EXPECT_EQ(f[1], 3.299999952316284f);
  EXPECT_NEAR(f[2], 10.890000343322754, 1e-6);
  EXPECT_EQ(elements<float>(logspace(0, 2, 3, 3.3, kBFloat16).to(kFloat32)), (std::vector<float>{1.0f, 3.296875f, 10.875f}));
  EXPECT_EQ(elements<int64_t>(logspace(0, 2, 3, 2.5, kInt64)), (std::vector<int64_t>{1, 2, 6}));
}

TEST(Linspace, ErrorsAsPyTorchGivesThem) {
  expect_error<ValueError>([] { linspace(0, 1, -1); }, {"number of steps must be non-negative"});
  expect_error<TypeError>([] { linspace(0, 3, 4, kBool); }, {"\"linspace_cpu\" not implemented for 'Bool'"});
}

TEST(Std, TheMethodIsTheFunction) {
  const Tensor x = tensor({{1.0, 2.0, 4.0}, {3.0, 3.0, 3.0}});
  EXPECT_TRUE(x.std().equal(tally::std(x)));
  // torch.tensor([[1., 2., 4.], [3., 3., 3.]]).std(1): [1.5275252316856384, 0.0]
  EXPECT_NEAR(x.std({1}).index({0}).item<double>(), 1.5275252316856384, 1e-6);
  EXPECT_EQ(x.std({1}).index({1}).item<double>(), 0.0);
}

}  // namespace
