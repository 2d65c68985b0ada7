#pragma once
// Shared by the optimizer tests: one optimization problem (initial parameters and 20 steps of
// gradients, the same for tally and PyTorch), PyTorch 1.13 run on it in one /usr/bin/python3
// call, and comparisons.

#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "tally/tally.h"

namespace optim_test {

/// Four parameters of different shapes; parameter 1 is a transposed (non-contiguous) view,
/// parameter 2 has no gradient at steps 0, 3, 6, ..., parameter 3 is larger than one thread's
/// grain, so the update is split over the cores.
struct Problem {
  static constexpr int kSteps = 20;
  std::vector<std::vector<int64_t>> shapes;
  std::vector<tally::Tensor> initial;                // float32, contiguous
  std::vector<std::vector<tally::Tensor>> grads;    // [step][param]; undefined: no gradient
  /// The one problem every test uses.
  static const Problem& get();
  /// Fresh parameters holding the initial values, in `dtype`.
  std::vector<tally::Tensor> fresh_params(tally::Dtype dtype = tally::kFloat32) const;
  /// Give `params` the gradients of step `t` (copies: the optimizer may not keep them).
  void set_grads(std::vector<tally::Tensor>& params, int t) const;
};

/// PyTorch cases computed by tests/optim/torch_reference.py in one run.
class TorchReference {
 public:
  TorchReference();
  ~TorchReference();
  TorchReference(const TorchReference&) = delete;
  TorchReference& operator=(const TorchReference&) = delete;
  /// A case: the Python expression over `params` that builds a torch.optim optimizer.
  void add_optim(const std::string& id, const std::string& expression);
  /// A case: clip_grad_norm_ of step 0's gradients.
  void add_clip(const std::string& id, double max_norm, double norm_type);
  /// Run Python once; returns an error message, empty on success.
  std::string run();
  /// Whether the output `name` exists ("adam_s0_exp_avg").
  bool has(const std::string& name) const;
  /// Output `name` as float64 with `sizes`.
  tally::Tensor result(const std::string& name, tally::IntArrayRef sizes) const;
  /// The relative tolerance for a float32 optimizer's state after the test's steps: 1e-6 against
  /// PyTorch 1.x, whose single-tensor updates tally follows operation for operation. PyTorch 2
  /// rounds otherwise (the first moment by lerp_, β·m + (1 − β)·g with one rounding less, and
  /// its own vectorised addcdiv), which after 20 steps moves elements that nearly cancel by up to
  /// about 1e-4 of their size (seen with 2.11): 5e-4 there.
  double state_rtol() const { return torch_major_ >= 2 ? 5e-4 : 1e-6; }

 private:
  std::string dir_;
  std::string manifest_;
  int torch_major_ = 0;  ///< of the PyTorch that computed the results, read by run()
};

/// Expect every element of `got` within `rtol` of `want`, relative to the element's magnitude
/// or, for elements much smaller than the tensor's largest, to rtol · 1e-3 of that largest (so a
/// value that cancels to nearly zero is judged on the scale of its neighbours).
void expect_close(const tally::Tensor& got, const tally::Tensor& want, double rtol, const std::string& what);

/// Expect `fn()` to raise `E` whose message contains every part.
template <class E, class Fn>
void expect_error(Fn&& fn, std::initializer_list<std::string_view> parts) {
  try {
    fn();
    ADD_FAILURE() << "expected an error containing '" << *parts.begin() << "'";
  } catch (const E& e) {
    const std::string msg = e.what();
    for (std::string_view p : parts) EXPECT_NE(msg.find(p), std::string::npos) << "'" << p << "' not in: " << msg;
  }
}

}  // namespace optim_test
