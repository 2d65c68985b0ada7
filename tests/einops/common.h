#pragma once
// Shared by the einops tests: an op recorder (what the ledger would see), a check that a call
// raises ValueError whose message contains given parts, and a PyTorch reference runner.

#include <gtest/gtest.h>

#include <map>
#include <string>
#include <vector>

#include "tally/ops/cost.h"
#include "tally/tally.h"

namespace einops_test {

/// Records every top-level op run while it lives.
struct OpRecorder : tally::ops::OpObserver {
  std::vector<std::pair<std::string, tally::ops::Cost>> ops;
  tally::ops::OpObserver* previous;
  OpRecorder() { previous = tally::ops::set_op_observer(this); }
  ~OpRecorder() override { tally::ops::set_op_observer(previous); }
  void on_op(std::string_view name, const tally::ops::Cost& cost, double) override {
    ops.emplace_back(std::string(name), cost);
  }
  /// How many ops called `name` ran.
  int count(std::string_view name) const {
    int n = 0;
    for (const auto& op : ops) n += op.first == name;
    return n;
  }
  /// Total FLOPs of ops called `name`.
  int64_t flops(std::string_view name) const {
    int64_t f = 0;
    for (const auto& op : ops)
      if (op.first == name) f += op.second.flops;
    return f;
  }
};

/// Expect `fn()` to raise tally::ValueError whose message contains every string in `parts`.
template <class Fn>
void expect_value_error(Fn&& fn, std::initializer_list<std::string_view> parts) {
  try {
    fn();
    ADD_FAILURE() << "expected ValueError containing '" << *parts.begin() << "'";
  } catch (const tally::ValueError& e) {
    const std::string msg = e.what();
    for (std::string_view p : parts) EXPECT_NE(msg.find(p), std::string::npos) << "'" << p << "' not in: " << msg;
  }
}

/// Expect a close match in float64 (shapes equal, |a-b| <= atol + rtol|b|).
inline void expect_close(const tally::Tensor& got, const tally::Tensor& want, double rtol = 1e-4, double atol = 1e-4) {
  ASSERT_EQ(got.sizes().vec(), want.sizes().vec());
  EXPECT_TRUE(got.to(tally::kFloat64).allclose(want.to(tally::kFloat64), rtol, atol)) << "got " << got << "\nwant " << want;
}

/// Cases computed by PyTorch in one /usr/bin/python3 run: inputs go out as raw float32 files,
/// torch evaluates each case (an einsum equation or a Python expression over x0, x1, ...), and the
/// results come back as raw float64 with their shapes.
class TorchReference {
 public:
  TorchReference() = default;
  TorchReference(const TorchReference&) = delete;
  TorchReference& operator=(const TorchReference&) = delete;
  /// Removes the temporary directory.
  ~TorchReference();
  /// torch.einsum(equation, inputs...).
  void add_einsum(const std::string& id, const std::string& equation, const std::vector<tally::Tensor>& inputs);
  /// eval(expression) with x0, x1, ... bound to the inputs (as float64 torch tensors).
  void add_expr(const std::string& id, const std::string& expression, const std::vector<tally::Tensor>& inputs);
  /// Run Python once; returns an error message, empty on success.
  std::string run();
  /// The result of case `id`.
  tally::Tensor result(const std::string& id) const;

 private:
  void add(const std::string& id, const std::string& kind, const std::string& text, const std::vector<tally::Tensor>& inputs);
  std::string dir_;
  std::string manifest_;
};

}  // namespace einops_test
