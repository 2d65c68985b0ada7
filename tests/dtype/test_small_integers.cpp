// int8 and int16 (libtorch's kChar and kShort): names, storage, wrap-around arithmetic and the
// conversions that differ from the wider integers. Expected values are torch 1.13's, worked out
// with /usr/bin/python3 (the differential suite compares every op over these dtypes besides).
#include <gtest/gtest.h>

#include <sstream>
#include <string>
#include <vector>

#include "tally/tally.h"
#include "tests/expect_error.h"

namespace tally {
namespace {

using test::expect_error;

std::vector<int64_t> longs(const Tensor& t) {
  const Tensor c = t.to(kInt64).contiguous();
  return std::vector<int64_t>(c.data_ptr<int64_t>(), c.data_ptr<int64_t>() + c.numel());
}

TEST(SmallIntegers, NamesSizesAndTypes) {
  EXPECT_EQ(dtype_name(kInt8), "int8");
  EXPECT_EQ(dtype_name(kInt16), "int16");
  EXPECT_EQ(kChar, kInt8);
  EXPECT_EQ(kShort, kInt16);
  EXPECT_EQ(element_size(kInt8), 1);
  EXPECT_EQ(element_size(kInt16), 2);
  EXPECT_EQ(dtype_from_name("torch.int8"), kInt8);
  EXPECT_EQ(dtype_from_name("short"), kInt16);
  EXPECT_TRUE(is_integral(kInt8) && is_integral(kInt16));
  EXPECT_FALSE(is_floating_point(kInt8) || is_floating_point(kInt16));
  const Tensor t = tensor({1, -2, 3}, kInt8);
  EXPECT_EQ(t.nbytes(), 3);
  EXPECT_EQ(t.data_ptr<int8_t>()[1], -2);
  EXPECT_EQ(t.index({1}).item<int8_t>(), -2);
  expect_error<TypeError>([&] { t.data_ptr<uint8_t>(); }, {"expected dtype uint8 but tensor has dtype int8"});
  EXPECT_EQ(zeros({2, 2}, kInt16).data_ptr<int16_t>()[3], 0);
  // An unknown name is told every dtype and alias, the new ones among them.
  expect_error<ValueError>([] { dtype_from_name("int4"); }, {"unknown dtype 'int4'", "int8, int16", "char, short"});
}

TEST(SmallIntegers, ArithmeticWrapsAsInTorch) {
  EXPECT_EQ(longs(tensor({100, -128}, kInt8) + tensor({100, -1}, kInt8)), (std::vector<int64_t>{-56, 127}));
  EXPECT_EQ(longs(tensor({100}, kInt8) * 3), (std::vector<int64_t>{44}));
  EXPECT_EQ(longs(tensor({20000}, kInt16) * 2), (std::vector<int64_t>{-25536}));
  EXPECT_EQ(longs(tensor({-128}, kInt8).neg()), (std::vector<int64_t>{-128}));
  EXPECT_EQ(longs(tensor({-128}, kInt8).abs()), (std::vector<int64_t>{-128}));
  // A 0-d int64 operand does not widen the result: int8 + 1000 stays int8 and wraps.
  const Tensor s = tensor({1, 2}, kInt8) + scalar_tensor(1000, kInt64);
  EXPECT_EQ(s.dtype(), kInt8);
  EXPECT_EQ(longs(s), (std::vector<int64_t>{-23, -22}));
  EXPECT_EQ(longs(maximum(tensor({7, -7}, kInt8), tensor({1, 2}, kUInt8))), (std::vector<int64_t>{7, 2}));
  EXPECT_EQ(maximum(tensor({7, -7}, kInt8), tensor({1, 2}, kUInt8)).dtype(), kInt16);  // uint8 with int8
  EXPECT_EQ((tensor({7, -7}, kInt8) / 2).dtype(), kFloat32);
  const Tensor a = tensor({{100, 50}, {3, 4}}, kInt8);
  const Tensor p = matmul(a, a);
  EXPECT_EQ(p.dtype(), kInt8);
  EXPECT_EQ(longs(p), (std::vector<int64_t>{-90, 80, 56, -90}));
}

TEST(SmallIntegers, ReductionsWidenToInt64) {
  EXPECT_EQ(tensor({120, 10}, kInt8).sum().dtype(), kInt64);
  EXPECT_EQ(tensor({120, 10}, kInt8).sum().item<int64_t>(), 130);
  EXPECT_EQ(tensor({5, -3}, kInt16).prod().dtype(), kInt64);
  EXPECT_EQ(tensor({5, -3}, kInt8).max().dtype(), kInt8);
  EXPECT_EQ(tensor({5, -3}, kInt16).argmin().item<int64_t>(), 1);
}

TEST(SmallIntegers, FloatsTruncateThenWrap) {
  EXPECT_EQ(longs(tensor({1.7e3, -300.5}).to(kInt8)), (std::vector<int64_t>{-92, -44}));
  EXPECT_EQ(longs(tensor({65535.0, 40000.0}).to(kInt16)), (std::vector<int64_t>{-1, -25536}));
  EXPECT_EQ(longs(tensor({200.9, -0.9}, kFloat16).to(kInt8)), (std::vector<int64_t>{-56, 0}));
  EXPECT_EQ(longs(tensor({300}, kInt32).to(kInt8)), (std::vector<int64_t>{44}));
}

TEST(SmallIntegers, ValuesOutOfRangeAreRefused) {
  expect_error<ValueError>([] { full({2}, 200, kInt8); }, {"value 200 cannot be converted to type int8 without overflow"});
  expect_error<ValueError>([] { tensor({-40000}, kInt16); }, {"cannot be converted to type int16"});
  expect_error<ValueError>([] { randint(0, 200, {3}, TensorOptions(kInt8)); }, {"to - 1 is out of bounds for int8"});
  expect_error<ValueError>([] { randint(-200, 0, {3}, TensorOptions(kInt8)); }, {"from is out of bounds for int8"});
  expect_error<ValueError>([] { (void)tensor({1000}, kInt16).item<int8_t>(); }, {"item: value 1000 cannot be converted to type int8"});
}

TEST(SmallIntegers, RandomFillsTheNonNegativeRange) {
  Generator gen(7);
  const Tensor r8 = empty({4000}, kInt8).random_(&gen);
  EXPECT_EQ(r8.min().item<int64_t>(), 0);
  EXPECT_EQ(r8.max().item<int64_t>(), 127);
  const Tensor r16 = randint(-32768, 32768, {4000}, TensorOptions(kInt16), &gen);
  EXPECT_LT(r16.min().item<int64_t>(), -30000);
  EXPECT_GT(r16.max().item<int64_t>(), 30000);
}

TEST(SmallIntegers, PrintsAsPythonAndAsLibtorch) {
  EXPECT_EQ(tensor({1, -2}, kInt8).to_string(), "tensor([ 1, -2], dtype=torch.int8)");
  EXPECT_EQ(tensor({300}, kInt16).to_string(), "tensor([300], dtype=torch.int16)");
  std::ostringstream os;
  os << tensor({1, -2}, kInt8);
  EXPECT_NE(os.str().find("[ CPUCharType{2} ]"), std::string::npos) << os.str();
  os.str("");
  os << tensor({3}, kInt16);
  EXPECT_NE(os.str().find("[ CPUShortType{1} ]"), std::string::npos) << os.str();
}

}  // namespace
}  // namespace tally
