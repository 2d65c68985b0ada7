// Printing to a stream as libtorch does (operator<<, print): each expected string follows
// at::print's rules (ATen's Formatting.cpp), worked through by hand for these values.

#include <gtest/gtest.h>

#include <sstream>
#include <string>

#include "tally/tally.h"

namespace tally {
namespace {

std::string streamed(const Tensor& t) {
  std::ostringstream os;
  os << t;
  return os.str();
}

TEST(PrintLibtorch, VectorsMatricesAndScalars) {
  // Not whole numbers, one decade: four decimals, width 7.
  EXPECT_EQ(streamed(tensor({1.5, -2.25, 3.0})), " 1.5000\n-2.2500\n 3.0000\n[ CPUFloatType{3} ]");
  // Whole numbers: their width plus one, columns one space apart.
  EXPECT_EQ(streamed(arange(6).view({2, 3})), " 0  1  2\n 3  4  5\n[ CPULongType{2,3} ]");
  EXPECT_EQ(streamed(scalar_tensor(3.5)), "3.5\n[ CPUFloatType{} ]");
  EXPECT_EQ(streamed(tensor({true, false})), " 1\n 0\n[ CPUBoolType{2} ]");
  EXPECT_EQ(streamed(zeros({0}, kFloat64)), "[ CPUDoubleType{0} ]");
  EXPECT_EQ(streamed(Tensor()), "[ Tensor (undefined) ]");
  EXPECT_EQ(streamed(ones({2, 3}, Device(kMeta))), "[ MetaFloatType{2,3} ]");
}

TEST(PrintLibtorch, LargeValuesGetACommonFactor) {
  EXPECT_EQ(streamed(tensor({1000.5, 2000.25})), " 1000.5000\n 2000.2500\n[ CPUFloatType{2} ]");
  EXPECT_EQ(streamed(tensor({1000000.5, 2000000.0}, kFloat64)), "1e+06 *\n 1.0000\n 2.0000\n[ CPUDoubleType{2} ]");
  // Over four decades apart: scientific, width 11.
  EXPECT_EQ(streamed(tensor({1e-5, 1.5})), " 1.0000e-05\n 1.5000e+00\n[ CPUFloatType{2} ]");
}

TEST(PrintLibtorch, MatricesOfAThreeDimTensor) {
  EXPECT_EQ(streamed(arange(8).view({2, 2, 2})),
            "(1,.,.) = \n  0  1\n  2  3\n\n(2,.,.) = \n  4  5\n  6  7\n[ CPULongType{2,2,2} ]");
  // Four dims: the first index counts fastest.
  std::ostringstream os;
  print(os, arange(16).view({2, 2, 2, 2}));
  EXPECT_EQ(os.str().substr(0, 9), "(1,1,.,.)");
  EXPECT_NE(os.str().find("(2,1,.,.) = \n   8   9\n  10  11"), std::string::npos) << os.str();
}

TEST(PrintLibtorch, LeavesTheStreamsFormatAsItWas) {
  std::ostringstream os;
  os << tensor({1.5}) << ' ' << 0.1234567;
  EXPECT_NE(os.str().find(" 0.123457"), std::string::npos) << os.str();
}

TEST(PrintLibtorch, ToStringStaysPythonsRepr) {
  EXPECT_EQ(tensor({1.5, 2.0}).to_string(), "tensor([1.5000, 2.0000])");
}

}  // namespace
}  // namespace tally
