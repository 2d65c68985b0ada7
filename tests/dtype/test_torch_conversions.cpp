// Conversions and integer-exact factories where tally once differed from PyTorch 1.13: each
// expected value is what /usr/bin/python3 with torch 1.13 gives for the same call (written next
// to it), so these fail if tally drifts from it again.

#include <gtest/gtest.h>

#include <cstdint>
#include <limits>
#include <vector>

#include "tally/tally.h"
#include "tests/elements.h"
#include "tests/expect_error.h"

using namespace tally;
using tally::test::expect_error;

namespace {

constexpr int64_t kInt64Max = std::numeric_limits<int64_t>::max();

std::vector<int64_t> longs(const Tensor& t) { return tally::test::elements<int64_t>(t); }

std::vector<bool> bools(const Tensor& t) {
  EXPECT_EQ(t.dtype(), kBool);
  return tally::test::elements<bool>(t);
}

}  // namespace

TEST(TorchConversions, TinyFloat64IsTrue) {
  // torch.full((4,), 1e-50, dtype=torch.float64)[0:4:2].to(torch.bool) -> tensor([True, True])
  // (a strided copy, which converts element by element)
  EXPECT_EQ(bools(full({4}, 1e-50, kFloat64).slice(0, 0, 4, 2).to(kBool)), (std::vector<bool>{true, true}));
  // torch.tensor([[5e-324, 0.], [-1e-300, 0.]], dtype=torch.float64).t().bool()
  //   -> tensor([[ True,  True], [False, False]])
  Tensor denormal = tensor({{5e-324, 0.0}, {-1e-300, 0.0}}, kFloat64).t();
  EXPECT_EQ(bools(denormal.to(kBool)), (std::vector<bool>{true, true, false, false}));
  // torch.tensor([1e-50, 0.5, 0.], dtype=torch.bool) -> tensor([ True,  True, False])
  EXPECT_EQ(bools(tensor({1e-50, 0.5, 0.}, kBool)), (std::vector<bool>{true, true, false}));
  // The narrow floats still convert through float: torch.tensor([6e-8, 1., 0., 1.],
  // dtype=torch.float16)[::2].bool() -> tensor([ True, False]) (6e-8: float16's smallest subnormal).
  EXPECT_EQ(bools(tensor({6e-8, 1.0, 0.0, 1.0}, kFloat16).slice(0, 0, 4, 2).to(kBool)), (std::vector<bool>{true, false}));
}

TEST(TorchConversions, TensorKeepsInt64Exact) {
  // torch.tensor([9007199254740993]) -> tensor([9007199254740993]) (2^53 + 1)
  EXPECT_EQ(longs(tensor({int64_t{9007199254740993}})), (std::vector<int64_t>{9007199254740993}));
  // torch.tensor([2**63 - 1, -2**63]) -> tensor([ 9223372036854775807, -9223372036854775808])
  Tensor extremes = tensor({kInt64Max, std::numeric_limits<int64_t>::min()});
  EXPECT_EQ(extremes.dtype(), kInt64);
  EXPECT_EQ(longs(extremes), (std::vector<int64_t>{kInt64Max, std::numeric_limits<int64_t>::min()}));
  // A float in an int64 tensor still truncates: torch.tensor([-1.5, 2.7], dtype=torch.int64) -> [-1, 2]
  EXPECT_EQ(longs(tensor({-1.5, 2.7}, kInt64)), (std::vector<int64_t>{-1, 2}));
}

TEST(TorchConversions, ArangeWithAnIntegralDtypeTruncatesItsArguments) {
  // torch.arange(0., 5.5, 1.5, dtype=torch.int64) -> tensor([0, 1, 2, 3, 4])
  EXPECT_EQ(longs(arange(0., 5.5, 1.5, kInt64)), (std::vector<int64_t>{0, 1, 2, 3, 4}));
  // torch.arange(-2.5, 2.5, 1, dtype=torch.int64) -> tensor([-2, -1,  0,  1])
  EXPECT_EQ(longs(arange(-2.5, 2.5, 1, kInt64)), (std::vector<int64_t>{-2, -1, 0, 1}));
  // torch.arange(0, 4, 1.5, dtype=torch.int64) -> tensor([0, 1, 2, 3])
  EXPECT_EQ(longs(arange(0, 4, 1.5, kInt64)), (std::vector<int64_t>{0, 1, 2, 3}));
  // torch.arange(-0.5, 3, 1, dtype=torch.int64) -> tensor([0, 1, 2])
  EXPECT_EQ(longs(arange(-0.5, 3, 1, kInt64)), (std::vector<int64_t>{0, 1, 2}));
  // torch.arange(0, -3.5, -1.5, dtype=torch.int64) -> tensor([ 0, -1, -2])
  EXPECT_EQ(longs(arange(0, -3.5, -1.5, kInt64)), (std::vector<int64_t>{0, -1, -2}));
  // int32 and uint8 count from the bounds as given, then truncate the values:
  // torch.arange(0., 5.5, 1.5, dtype=torch.int32) -> tensor([0, 1, 2, 3], dtype=torch.int32)
  EXPECT_EQ(longs(arange(0., 5.5, 1.5, kInt32)), (std::vector<int64_t>{0, 1, 2, 3}));
  // torch.arange(-2.5, 2.5, 1, dtype=torch.int32) -> tensor([-2, -1,  0,  1,  2], dtype=torch.int32)
  EXPECT_EQ(longs(arange(-2.5, 2.5, 1, kInt32)), (std::vector<int64_t>{-2, -1, 0, 1, 2}));
  // torch.arange(-2.5, 2.5, 1, dtype=torch.uint8) -> tensor([254, 255,   0,   1,   2], dtype=torch.uint8)
  EXPECT_EQ(longs(arange(-2.5, 2.5, 1, kUInt8)), (std::vector<int64_t>{254, 255, 0, 1, 2}));
  // torch.arange(0, 2.5, 0.5, dtype=torch.int64) -> RuntimeError: step must be nonzero (0.5 -> 0)
  expect_error<ValueError>([] { arange(0, 2.5, 0.5, kInt64); }, {"step must be nonzero"});
  expect_error<ValueError>([] { arange(0, 10, 0.9, kInt32); }, {"step must be nonzero"});
  // Floating dtypes are unchanged: torch.arange(0, 4, 1.5) -> tensor([0.0000, 1.5000, 3.0000])
  EXPECT_EQ(arange(0, 4, 1.5).numel(), 3);
}

TEST(TorchConversions, ArangeRefusesBool) {
  // torch.arange(0, 5, 1, dtype=torch.bool) -> RuntimeError: "arange_cpu" not implemented for 'Bool'
  expect_error<TypeError>([] { arange(0, 5, 1, kBool); }, {"\"arange_cpu\" not implemented for 'Bool'"});
  expect_error<TypeError>([] { arange(5, kBool); }, {"\"arange_cpu\" not implemented for 'Bool'"});
}

TEST(TorchConversions, BoolToABoolPowerIsRefused) {
  // torch.pow(torch.tensor([True, False]), True) -> RuntimeError: "pow" not implemented for 'Bool'
  expect_error<TypeError>([] { pow(tensor({true, false}), true); }, {"\"pow\" not implemented for 'Bool'"});
  // torch.pow(torch.tensor([True, False]), 2) -> tensor([1, 0]) (int64)
  Tensor squared = pow(tensor({true, false}), 2);
  EXPECT_EQ(squared.dtype(), kInt64);
  EXPECT_EQ(longs(squared), (std::vector<int64_t>{1, 0}));
}
