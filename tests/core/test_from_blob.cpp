// from_blob: tensors over the caller's memory, without a copy, and its errors.

#include <gtest/gtest.h>

#include <vector>

#include "tally/tally.h"
#include "tests/expect_error.h"

namespace {

using namespace tally;
using tally::test::expect_error;

TEST(FromBlob, SharesTheCallersMemory) {
  std::vector<float> data = {1, 2, 3, 4, 5, 6};
  Tensor t = from_blob(data.data(), {2, 3});
  EXPECT_EQ(t.data_ptr(), data.data());
  EXPECT_TRUE(t.equal(tensor({{1.0f, 2.0f, 3.0f}, {4.0f, 5.0f, 6.0f}})));
  t.index_put_({1, 2}, 60.0);
  EXPECT_EQ(data[5], 60.0f);  // a write through the tensor lands in the caller's array
  data[0] = 10;
  EXPECT_EQ(t.index({0, 0}).item<float>(), 10.0f);
  // Strides: every other element, as a column; another dtype.
  const Tensor col = from_blob(data.data(), {3}, {2});
  EXPECT_TRUE(col.equal(tensor({10.0f, 3.0f, 5.0f})));
  std::vector<int64_t> ids = {7, 8};
  EXPECT_TRUE(from_blob(ids.data(), {2}, TensorOptions(kInt64)).equal(tensor({7, 8})));
  // Ops make new tensors of tally's own memory.
  EXPECT_NE((t * 2).data_ptr(), data.data());
}

TEST(FromBlob, DeleterRunsWhenTheLastViewGoes) {
  int deleted = 0;
  auto* data = new double[4]{1, 2, 3, 4};
  Tensor view;
  {
    Tensor t = from_blob(data, {4}, [&](void* p) { ++deleted; delete[] static_cast<double*>(p); }, TensorOptions(kFloat64));
    view = t.slice(0, 1, 3);
  }
  EXPECT_EQ(deleted, 0);
  EXPECT_TRUE(view.equal(tensor({2.0, 3.0})));
  view = Tensor();
  EXPECT_EQ(deleted, 1);
}

TEST(FromBlob, Errors) {
  float x = 0;
  expect_error<DeviceError>([&] { from_blob(&x, {1}, TensorOptions().device(kMeta)); }, {"meta tensor has no data"});
  expect_error<ValueError>([&] { from_blob(&x, {2}, {-1}); }, {"negative stride -1"});
  expect_error<ValueError>([&] { from_blob(nullptr, {2}); }, {"null pointer"});
  EXPECT_EQ(from_blob(nullptr, {0, 3}).numel(), 0);
}

}  // namespace
