// Writing your own optimizer on tally's public API: the lecture's AdaGrad.
//
// The lecture (CS336 lecture 2) writes AdaGrad in a few lines of PyTorch:
//     g2 = state.get("g2", torch.zeros_like(grad))
//     g2 += torch.square(grad)
//     p.data -= lr * grad / torch.sqrt(g2 + 1e-5)
// Note where its eps sits: inside the square root, added to the running sum. PyTorch's
// torch.optim.Adagrad (tally::optim::Adagrad) adds its eps (1e-10) after the square root.
//
// A tally optimizer subclasses tally::optim::OptimizerOf<its options> and says three things: the name of its
// ledger row, the state tensors a parameter starts with, and the update of one parameter. The
// base class does the rest: param groups, skipping parameters without gradients, zero_grad,
// state_dict / load_state_dict, graph recording off during the step, memory accounting of the
// state as optimizer state, and one ledger row per step. Below, the update is written with tally
// ops; the built-in optimizers fuse theirs into one loop over memory (tally/optim/fused.h).

#include <fmt/core.h>

#include "tally/tally.h"

using namespace tally;

namespace {

/// The lecture's AdaGrad's one hyper-parameter.
class LectureAdaGradOptions : public optim::OptimizerCloneableOptions<LectureAdaGradOptions> {
 public:
  explicit LectureAdaGradOptions(double lr = 0.01) : lr_(lr) {}
  TALLY_OPTIM_ARG(double, lr);

 public:
  // The one list of hyper-parameters that state_dict() saves and load_state_dict() restores.
  optim::Hypers hypers() override { return {{"lr", &lr_}}; }
  void validate() const override { TALLY_CHECK(lr_ >= 0, "Invalid learning rate: ", lr_); }
};

/// p ← p − lr · g / √(Σ g² + 1e-5), the lecture's update.
class LectureAdaGrad : public optim::OptimizerOf<LectureAdaGradOptions> {
 public:
  using OptimizerOf::OptimizerOf;  // (params, options) and (param groups, default options)

 protected:
  std::string_view step_name() const override { return "lecture_adagrad_step"; }
  // g2, the running sum of squared gradients, starts at zero (the lecture's zeros_like).
  std::vector<std::pair<std::string, double>> state_init(const optim::OptimizerOptions&) const override {
    return {{"g2", 0.0}};
  }
  ops::Cost update(Tensor& param, const Tensor& grad, optim::OptimizerParamState& state,
                   const optim::OptimizerOptions& options) override {
    const double lr = options.get_lr();
    Tensor& g2 = state.tensors.at("g2");
    g2.addcmul_(grad, grad);                                        // g2 += grad²
    param.sub_(grad / (g2 + 1e-5).sqrt(), lr);  // p −= lr · grad / √(g2 + eps)
    // The ops above run inside the step's one ledger row, which records what we declare here:
    // per element 2 FLOPs for g2 (mul, add) and 5 for the step (add, sqrt, div, mul, sub).
    const int64_t n = param.numel(), bytes = param.element_size();
    return {7 * n, 3 * n * bytes, 2 * n * bytes};
  }
};

}  // namespace

int main() {
  manual_seed(0);
  // A tiny linear model y = x · w, fitted to targets made by a known w_true.
  const int64_t B = 16, D = 4;
  const Tensor x = randn({B, D});                     // [B, D] inputs
  const Tensor w_true = tensor({{1.0}, {-2.0}, {0.5}, {3.0}});  // [D, 1]
  const Tensor y = matmul(x, w_true);                 // [B, 1] targets
  Tensor w = zeros({D, 1}).requires_grad_();           // [D, 1] the parameter

  LectureAdaGrad optimizer({w}, LectureAdaGradOptions(0.5));
  accounting::FlopCounter ledger;
  for (int step = 0; step < 10; ++step) {
    const Tensor diff = matmul(x, w) - y;
    const Tensor loss = (diff * diff).mean();  // mean squared error
    loss.backward();
    optimizer.step();
    optimizer.zero_grad(/*set_to_none=*/true);
    fmt::print("step {:2d}  loss {:.6f}\n", step, loss.item<double>());
  }
  const auto row = ledger.op("lecture_adagrad_step", accounting::Phase::Optimizer);
  fmt::print("optimizer: {} steps, {} FLOPs in the ledger ({} per step for {} parameters)\n", row.calls, row.flops,
             row.flops / row.calls, w.numel());
  fmt::print("optimizer state: {} bytes (one float32 g2 per parameter)\n",
             accounting::MemoryTracker().allocated_bytes(MemoryCategory::OptimizerState));
  fmt::print("state_dict keys:");
  for (const std::string& key : optimizer.state_dict().keys()) fmt::print(" {}", key);
  fmt::print("\n");
  return 0;
}
