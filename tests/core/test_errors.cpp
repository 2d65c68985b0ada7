// Bad input raises a typed tally::Error whose message names the problem with PyTorch's wording
// (checked against torch 1.13's messages) and the shapes or values involved.

#include <gtest/gtest.h>

#include "tally/tally.h"

using namespace tally;
using namespace tally::indexing;

namespace {

/// Run f, expect exception type E, and return its message.
template <class E, class F>
std::string message_of(F&& f) {
  try {
    f();
  } catch (const E& e) {
    return e.what();
  } catch (const std::exception& e) {
    ADD_FAILURE() << "wrong exception type, message: " << e.what();
    return "";
  }
  ADD_FAILURE() << "no exception raised";
  return "";
}

void expect_contains(const std::string& msg, const std::string& part) {
  EXPECT_NE(msg.find(part), std::string::npos) << "message: " << msg << "\nexpected to contain: " << part;
}

}  // namespace

TEST(Errors, ViewOnIncompatibleStrides) {
  Tensor x = ones({2, 3});
  auto msg = message_of<ValueError>([&] { x.t().view({2, 3}); });
  expect_contains(msg, "view size is not compatible with input tensor's size and stride");
  expect_contains(msg, "[3, 2]");
}

TEST(Errors, ReshapeToWrongSize) {
  auto msg = message_of<ValueError>([] { ones({2, 3}).reshape({4, 2}); });
  expect_contains(msg, "shape '[4, 2]' is invalid for input of size 6");
  expect_contains(message_of<ValueError>([] { ones({2, 3}).view({-1, -1}); }), "only one dimension can be inferred");
}

TEST(Errors, BroadcastMismatch) {
  auto msg = message_of<ValueError>([] { ones({2, 3}) + ones({4, 3}); });
  expect_contains(msg, "The size of tensor a (2) must match the size of tensor b (4) at non-singleton dimension 0");
  msg = message_of<ValueError>([] { ones({2, 3}).expand({3, 3}); });
  expect_contains(msg, "The expanded size of the tensor (3) must match the existing size (2) at non-singleton dimension 0");
  Tensor a = ones({2, 3});
  msg = message_of<ValueError>([&] { a += ones({4, 2, 3}); });
  expect_contains(msg, "doesn't match the broadcast shape [4, 2, 3]");
}

TEST(Errors, MatmulShapes) {
  auto msg = message_of<ValueError>([] { matmul(ones({4, 8}), ones({16, 2})); });
  expect_contains(msg, "mat1 and mat2 shapes cannot be multiplied (4x8 and 16x2)");
  msg = message_of<ValueError>([] { matmul(ones({2, 4, 8}), ones({3, 8, 2})); });
  expect_contains(msg, "The size of tensor a (2) must match the size of tensor b (3) at non-singleton dimension 0");
  msg = message_of<TypeError>([] { matmul(ones({2, 2}), ones({2, 2}, kFloat64)); });
  expect_contains(msg, "expected m1 and m2 to have the same dtype, but got: float32 != float64");
  expect_contains(message_of<ValueError>([] { matmul(scalar_tensor(1.0), ones({2})); }), "at least 1D");
}

TEST(Errors, DimensionOutOfRange) {
  auto msg = message_of<IndexError>([] { ones({2, 3}).sum({5}); });
  expect_contains(msg, "Dimension out of range (expected to be in range of [-2, 1], but got 5)");
  msg = message_of<IndexError>([] { ones({2, 3}).transpose(0, 2); });
  expect_contains(msg, "Dimension out of range (expected to be in range of [-2, 1], but got 2)");
  msg = message_of<ValueError>([] { ones({2}).sum({0, 0}); });
  expect_contains(msg, "dim 0 appears multiple times in the list of dims");
}

TEST(Errors, IndexOutOfBounds) {
  auto msg = message_of<IndexError>([] { ones({2, 3}).index({5}); });
  expect_contains(msg, "index 5 is out of bounds for dimension 0 with size 2");
  msg = message_of<IndexError>([] { ones({2, 3}).index({0, -4}); });  // torch.ones(2, 3)[0, -4]
  expect_contains(msg, "index -4 is out of bounds for dimension 1 with size 3");
  msg = message_of<IndexError>([] { ones({3}).index_select(0, tensor({5})); });
  expect_contains(msg, "index out of range in self");
  msg = message_of<IndexError>([] { ones({3}).index({0, 0}); });
  expect_contains(msg, "too many indices for tensor of dimension 1");
}

TEST(Errors, NegativeDimension) {
  auto msg = message_of<ValueError>([] { empty({-1, 2}); });
  expect_contains(msg, "Trying to create tensor with negative dimension -1: [-1, 2]");
  expect_contains(message_of<ValueError>([] { zeros({3, -2}); }), "negative dimension -2");
}

TEST(Errors, SizeOverflow) {
  const int64_t huge = int64_t{1} << 40;
  auto msg = message_of<ValueError>([&] { empty({huge, huge}); });
  expect_contains(msg, "Storage size calculation overflowed with sizes=[1099511627776, 1099511627776]");
  msg = message_of<ValueError>([&] { empty({huge, 1 << 22}, kFloat64); });  // elements fit, bytes do not
  expect_contains(msg, "overflow");
}

TEST(Errors, UnsupportedDtype) {
  auto msg = message_of<TypeError>([] { ones({3}, kInt64).mean(); });
  expect_contains(msg, "mean(): could not infer output dtype. Input dtype must be either a floating point or complex dtype");
  msg = message_of<TypeError>([] { softmax(ones({3}, kInt32), 0); });
  expect_contains(msg, "not implemented for 'int32'");
  msg = message_of<TypeError>([] { exp(ones({3}).to(kFloat8_e4m3fn)); });
  expect_contains(msg, "not implemented for 'float8_e4m3fn'");
  msg = message_of<TypeError>([] { ones({3}).to(kFloat8_e5m2) + ones({3}); });
  expect_contains(msg, "Promotion for Float8 Types is not supported");
  msg = message_of<TypeError>([] { -ones({3}, kBool); });
  expect_contains(msg, "Negation, the `-` operator, on a bool tensor is not supported");
  msg = message_of<TypeError>([] { ones({2}, kBool) - ones({2}, kBool); });
  expect_contains(msg, "Subtraction, the `-` operator, with two bool tensors is not supported. Use the `^` or `logical_xor()` operator");
  msg = message_of<TypeError>([] { ones({2}, kBool) - ones({2}); });
  expect_contains(msg, "Subtraction, the `-` operator, with a bool tensor is not supported");
  Tensor i = ones({2}, kInt64);
  msg = message_of<TypeError>([&] { i += ones({2}); });
  expect_contains(msg, "result type float32 can't be cast to the desired output type int64");
  msg = message_of<TypeError>([] { ones({2}).data_ptr<double>(); });
  expect_contains(msg, "expected dtype float64 but tensor has dtype float32");
}

TEST(Errors, OtherMisuse) {
  expect_contains(message_of<ValueError>([] { ones({4}).item<float>(); }), "a Tensor with 4 elements cannot be converted to Scalar");
  expect_contains(message_of<ValueError>([] { cat({ones({2, 3}), ones({2, 4})}); }),
                  "Sizes of tensors must match except in dimension 0. Expected size 3 but got size 4 for tensor number 1 in the list.");
  expect_contains(message_of<ValueError>([] { ones({2, 3}).permute({0, 0}); }), "duplicate dims");
  expect_contains(message_of<ValueError>([] { tensor({{1, 2}, {3}}); }), "expected sequence of length 2");
  expect_contains(message_of<ValueError>([] { Tensor().dim(); }), "undefined");
  expect_contains(message_of<ValueError>([] { ones({2}).slice(0, 0, 2, 0); }), "slice step must be positive");
  expect_contains(message_of<ValueError>([] { arange(0, 10, 0); }), "step must be nonzero");
  expect_contains(message_of<ValueError>([] { pow(tensor({2}), -1); }), "Integers to negative integer powers are not allowed.");
}
