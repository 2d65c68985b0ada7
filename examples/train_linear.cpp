// The lecture's train loop, read top to bottom: data from a linear function with weights
// 0, 1, ..., D−1, a linear model (the Cruncher with no hidden layer), SGD at two learning rates,
// the loss printed per step; then what one step cost, read off the ledger and the memory tracker.

#include <fmt/core.h>

#include "tally/tally.h"

using namespace tally;

namespace {

/// y = x · (0, 1, ..., D−1) for B random inputs: the lecture's get_batch for this toy problem.
std::pair<Tensor, Tensor> get_batch(int64_t B, int64_t D, Generator& gen) {
  Tensor x = randn({B, D}, {}, &gen);
  Tensor true_w = arange(D, TensorOptions(kFloat32));
  return {x, matmul(x, true_w)};
}

void train(const char* name, int64_t D, int64_t B, int64_t steps, double lr) {
  Generator gen(0);
  nn::Cruncher model(D, /*num_layers=*/0, {}, &gen);
  optim::SGD optimizer(model.parameters(), optim::SGDOptions(lr));
  fmt::print("{} (lr {})\n", name, lr);
  for (int64_t t = 0; t < steps; ++t) {
    auto [x, y] = get_batch(B, D, gen);
    Tensor loss = mse_loss(model.forward(x), y);
    loss.backward();
    optimizer.step();
    optimizer.zero_grad(/*set_to_none=*/true);
    fmt::print("  step {:2d}  loss {:.4f}\n", t, loss.item<float>());
  }
}

}  // namespace

int main() {
  const int64_t D = 16, B = 4, steps = 10;
  train("simple", D, B, steps, 0.01);
  train("simple", D, B, steps, 0.1);

  // One step, with the books open.
  Generator gen(1);
  accounting::MemoryTracker tracker;
  nn::Cruncher model(D, 0, {}, &gen);
  optim::SGD optimizer(model.parameters(), optim::SGDOptions(0.1));
  auto [x, y] = get_batch(B, D, gen);
  accounting::FlopCounter counter;
  Tensor loss = mse_loss(model.forward(x), y);
  loss.backward();
  optimizer.step();
  fmt::print("\nOne step: {} FLOPs forward, {} backward, {} in the optimizer\n", counter.total_flops(accounting::Phase::Forward),
             counter.total_flops(accounting::Phase::Backward), counter.total_flops(accounting::Phase::Optimizer));
  fmt::print("{}", tracker.report());
}
