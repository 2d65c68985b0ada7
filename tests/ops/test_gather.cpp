// gather, scatter (of a tensor and of a value) and scatter_add: values, gradients, in-place forms
// and errors as torch 1.13's (the differential tests add random strided cases in every dtype).

#include <gtest/gtest.h>

#include <vector>

#include "tally/tally.h"
#include "tests/expect_error.h"

namespace {

using namespace tally;
using tally::test::expect_error;

Tensor longs(const NestedList& values) { return tensor(values, TensorOptions(kInt64)); }

TEST(Gather, ValuesAndGradientAsTorchs) {
  // torch: x = arange(12.).view(3, 4); x.gather(1, [[0, 0], [3, 1], [2, 2]]) = [[0, 0], [7, 5],
  // [10, 10]]; with weights [[1, 2], [3, 4], [5, 6]] the repeats add up in x.grad.
  Tensor x = arange(12, TensorOptions(kFloat32)).view({3, 4}).requires_grad_();
  Tensor y = x.gather(1, longs({{0, 0}, {3, 1}, {2, 2}}));
  EXPECT_TRUE(y.equal(tensor({{0.0, 0.0}, {7.0, 5.0}, {10.0, 10.0}})));
  (y * tensor({{1.0, 2.0}, {3.0, 4.0}, {5.0, 6.0}})).sum().backward();
  EXPECT_TRUE(x.grad().equal(tensor({{3.0, 0.0, 0.0, 0.0}, {0.0, 4.0, 0.0, 3.0}, {0.0, 0.0, 11.0, 0.0}})));
  // The index may be longer than x along dim (torch: [5, 2] from [3, 4] along 0); a 0-d x is one of [1].
  EXPECT_EQ(gather(x.detach(), 0, zeros({5, 2}, TensorOptions(kInt64))).sizes(), IntArrayRef({5, 2}));
  EXPECT_TRUE(gather(scalar_tensor(5.0), 0, longs({0})).equal(tensor({5.0})));
  EXPECT_EQ(gather(scalar_tensor(5.0), 0, scalar_tensor(0, TensorOptions(kInt64))).dim(), 0);
}

TEST(Gather, ScatterAndScatterAddAsTorchs) {
  const Tensor index = longs({{0, 1}, {2, 0}});
  EXPECT_TRUE(zeros({3, 4}).scatter_add(0, index, ones({2, 2})).equal(tensor({{1.0, 1.0, 0.0, 0.0}, {0.0, 1.0, 0.0, 0.0}, {1.0, 0.0, 0.0, 0.0}})));
  EXPECT_TRUE(zeros({3, 4}).scatter(0, index, ones({2, 2}) * 5).equal(tensor({{5.0, 5.0, 0.0, 0.0}, {0.0, 5.0, 0.0, 0.0}, {5.0, 0.0, 0.0, 0.0}})));
  EXPECT_TRUE(zeros({3, 4}).scatter(0, index, 7.0).equal(tensor({{7.0, 7.0, 0.0, 0.0}, {0.0, 7.0, 0.0, 0.0}, {7.0, 0.0, 0.0, 0.0}})));
  // Repeats accumulate; bool sums are ORs (torch: [True, False, False]); an int64 self takes 2.5 as 2.
  EXPECT_TRUE(zeros({3}, TensorOptions(kBool)).scatter_add(0, longs({0, 0}), ones({2}, TensorOptions(kBool))).equal(
      tensor({true, false, false})));
  EXPECT_TRUE(zeros({3}, TensorOptions(kInt64)).scatter(0, longs({0, 0}), 2.5).equal(longs({2, 0, 0})));
  // In place, into a transposed view: the same as out of place.
  Tensor base = arange(12, TensorOptions(kFloat32)).view({4, 3});
  Tensor t = base.t();
  const Tensor want_add = t.scatter_add(1, longs({{3, 3}}), ones({1, 2})), want_set = t.scatter(1, longs({{1}}), -1.0);
  Tensor a = t.clone();
  a.scatter_add_(1, longs({{3, 3}}), ones({1, 2}));
  EXPECT_TRUE(a.equal(want_add));
  t.scatter_(1, longs({{1}}), -1.0);
  EXPECT_TRUE(t.equal(want_set));
  EXPECT_EQ(base.select(0, 1).select(0, 0).item<float>(), -1.0f);
}

TEST(Gather, ScatterGradientsAsTorchsAndWhereSrcIsLargerThanTheIndex) {
  // Where src was written, self's gradient is zero; src's is the gradient gathered at the index,
  // and zero on the part of src the index does not reach (torch's engine rejects that case:
  // "ScatterBackward0 returned an invalid gradient at index 1 - got [2, 2] but expected shape
  // compatible with [3, 3]").
  const Tensor index = longs({{0, 1}, {2, 0}}), weights = arange(9, TensorOptions(kFloat32)).view({3, 3});
  for (bool add : {false, true}) {
    Tensor x = zeros({3, 3}).requires_grad_(), src = ones({3, 3}).requires_grad_();
    (((add ? x.scatter_add(0, index, src) : x.scatter(0, index, src))) * weights).sum().backward();
    EXPECT_TRUE(x.grad().equal(add ? weights : tensor({{0.0, 0.0, 2.0}, {3.0, 0.0, 5.0}, {0.0, 7.0, 8.0}}))) << add;
    EXPECT_TRUE(src.grad().equal(tensor({{0.0, 4.0, 0.0}, {6.0, 1.0, 0.0}, {0.0, 0.0, 0.0}}))) << add;
  }
  Tensor x = zeros({3, 3}).requires_grad_();
  (x.scatter(0, index, 5.0) * weights).sum().backward();
  EXPECT_TRUE(x.grad().equal(tensor({{0.0, 0.0, 2.0}, {3.0, 0.0, 5.0}, {0.0, 7.0, 8.0}})));
}

TEST(Gather, BadIndicesAreNamedAsTorchs) {
  const Tensor x = arange(12, TensorOptions(kFloat32)).view({3, 4});
  expect_error<TypeError>([&] { gather(x, 0, tensor({{0, 1}}, TensorOptions(kInt32))); }, {"gather(): Expected dtype int64 for index"});
  expect_error<ValueError>([&] { gather(x, 0, longs({0, 1})); }, {"Index tensor must have the same number of dimensions as input tensor"});
  expect_error<IndexError>([&] { gather(x, 0, longs({{3, 1}})); }, {"index 3 is out of bounds for dimension 0 with size 3"});
  expect_error<IndexError>([&] { gather(x, 0, longs({{-1, 1}})); }, {"index -1 is out of bounds for dimension 0 with size 3"});
  expect_error<ValueError>([&] { gather(x, 1, zeros({4, 2}, TensorOptions(kInt64))); },
                           {"Size does not match at dimension 0 expected index [4, 2] to be smaller than self [3, 4] apart from dimension 1"});
  expect_error<IndexError>([&] { gather(x, 2, zeros({3, 2}, TensorOptions(kInt64))); }, {"Dimension out of range"});
  const Tensor index = longs({{0, 1}, {2, 0}});
  expect_error<ValueError>([&] { zeros({3, 4}).scatter_add(0, index, ones({1, 2})); },
                           {"Expected index [2, 2] to be smaller than self [3, 4] apart from dimension 0 and to be smaller size than src [1, 2]"});
  expect_error<TypeError>([&] { zeros({3, 4}).scatter_add(0, index, ones({2, 2}, TensorOptions(kFloat64))); },
                          {"scatter(): Expected self.dtype to be equal to src.dtype"});
  expect_error<IndexError>([&] { zeros({3, 4}).scatter(1, longs({{0, 4}}), 7.0); }, {"index 4 is out of bounds for dimension 1 with size 4"});
  expect_error<ValueError>([&] { zeros({3}, TensorOptions(kUInt8)).scatter(0, longs({0}), 300); }, {"value 300 cannot be converted to type uint8", "without overflow"});
}

}  // namespace
