// Every op reports its declared cost through the one apply() path; nested ops are not counted
// twice; views are free.

#include <gtest/gtest.h>

#include <map>
#include <string>

#include "tally/ops/apply.h"
#include "tally/tally.h"

using namespace tally;

namespace {
struct Recorder : ops::OpObserver {
  std::vector<std::pair<std::string, ops::Cost>> ops;
  void on_op(std::string_view name, const ops::Cost& cost, double) override { ops.emplace_back(std::string(name), cost); }
};
struct Scope {
  Recorder rec;
  ops::OpObserver* prev;
  Scope() { prev = ops::set_op_observer(&rec); }
  ~Scope() { ops::set_op_observer(prev); }
};
}  // namespace

TEST(Apply, MatmulCostIsTwoMNK) {
  Tensor a = ones({64, 32}), b = ones({32, 16});
  Scope s;
  matmul(a, b);
  ASSERT_EQ(s.rec.ops.size(), 1u);
  EXPECT_EQ(s.rec.ops[0].first, "matmul");
  EXPECT_EQ(s.rec.ops[0].second.flops, 2 * 64 * 32 * 16);
  EXPECT_EQ(s.rec.ops[0].second.bytes_read, (64 * 32 + 32 * 16) * 4);
  EXPECT_EQ(s.rec.ops[0].second.bytes_written, 64 * 16 * 4);
}

TEST(Apply, ElementwiseAndNestedOps) {
  Tensor x = ones({10, 10}), y = ones({10}, kFloat64);
  Scope s;
  Tensor z = x + y;  // the float32 → float64 conversion inside add is part of add
  ASSERT_EQ(s.rec.ops.size(), 1u);
  EXPECT_EQ(s.rec.ops[0].first, "add");
  EXPECT_EQ(s.rec.ops[0].second.flops, 100);
  EXPECT_EQ(s.rec.ops[0].second.bytes_read, 400 + 80);
  EXPECT_EQ(s.rec.ops[0].second.bytes_written, 800);
  s.rec.ops.clear();
  Tensor v = x.view({100}).reshape({10, 10}).transpose(0, 1).unsqueeze(0).expand({3, 10, 10});
  ASSERT_FALSE(s.rec.ops.empty());
  for (auto& [name, cost] : s.rec.ops) {
    EXPECT_EQ(cost.flops, 0) << name;
    EXPECT_EQ(cost.bytes_read + cost.bytes_written, 0) << name;
  }
}

TEST(Apply, SoftmaxAndReductionCosts) {
  Tensor x = ones({8, 16});
  Scope s;
  softmax(x, -1);
  x.sum({1});
  ASSERT_EQ(s.rec.ops.size(), 2u);
  EXPECT_EQ(s.rec.ops[0].second.flops, 5 * 128);
  EXPECT_EQ(s.rec.ops[1].first, "sum");
  EXPECT_EQ(s.rec.ops[1].second.flops, 128);
  EXPECT_EQ(s.rec.ops[1].second.bytes_written, 8 * 4);
}
