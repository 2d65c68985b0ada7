// bfloat16 parameters without float32 master weights (Note [Stochastic rounding] in
// tally/optim/fused.h): float32 optimizer state, the update in float32 and written back with
// stochastic rounding, which keeps updates far below a bfloat16 step where rounding to nearest
// drops them; reproducible, on any thread count; the ledger and the tracker count the real bytes.

#include <gtest/gtest.h>
#include <omp.h>

#include "tally/tally.h"

namespace tally::optim {
namespace {

/// `steps` SGD steps of a constant gradient 1 at learning rate lr on a parameter of n ones.
Tensor sgd_steps(Dtype dtype, int steps, double lr, int64_t n = 4096) {
  Tensor p = ones({n}, TensorOptions(dtype)).requires_grad_();
  SGD sgd({p}, SGDOptions(lr));
  for (int i = 0; i < steps; ++i) {
    p.mutable_grad() = ones({n}, TensorOptions(dtype));
    sgd.step();
  }
  return p.detach();
}

TEST(Bfloat16Params, StochasticRoundingKeepsUpdatesBelowABfloat16Step) {
  // Each update is 1e-4: an eightieth of bfloat16's step at 1 (2^-7), so rounding to nearest
  // would never move the parameter. Stochastic rounding moves it by 1e-4 on average.
  const int steps = 1000;
  const Tensor p = sgd_steps(kBFloat16, steps, 1e-4);
  const double mean = p.to(kFloat64).mean().item<double>();
  EXPECT_NEAR(mean, 1.0 - steps * 1e-4, 2e-3);
  EXPECT_LT(mean, 0.95);  // it moved: nearest rounding would leave it at 1 exactly
  // Each element is a random walk around the float32 trajectory: about 0.02 of spread (√(1000 ·
  // 0.026) bfloat16 steps of 2^-8), so over 4096 elements none strays past 0.08 (the rounding is
  // deterministic: this is one fixed draw, 0.065); rounding to nearest would be 0.1 off, all of them.
  const double f32 = sgd_steps(kFloat32, steps, 1e-4, 1).item<float>();
  EXPECT_LT((p.to(kFloat64) - f32).abs().max().item<double>(), 0.08);
}

TEST(Bfloat16Params, AStepIsReproducibleOnAnyThreadCount) {
  const int threads = omp_get_max_threads();
  omp_set_num_threads(1);
  const Tensor one = sgd_steps(kBFloat16, 20, 1e-3, 100000);
  omp_set_num_threads(std::max(threads, 2));
  const Tensor two = sgd_steps(kBFloat16, 20, 1e-3, 100000);
  omp_set_num_threads(threads);
  EXPECT_TRUE(equal(one, two));
}

TEST(Bfloat16Params, AdamWKeepsFloat32StateAndTheBooksCountItsBytes) {
  const int64_t n = 1000;
  Generator gen(3);
  Tensor p = randn({n}, TensorOptions(kBFloat16), &gen).requires_grad_();
  accounting::MemoryTracker tracker;
  accounting::FlopCounter counter;
  AdamW adamw({p}, AdamWOptions(1e-2));
  p.mutable_grad() = randn({n}, TensorOptions(kBFloat16), &gen);
  adamw.step();
  const OptimizerParamState* s = adamw.state(p);
  ASSERT_NE(s, nullptr);
  EXPECT_EQ(s->tensors.at("exp_avg").dtype(), kFloat32);
  EXPECT_EQ(tracker.allocated_bytes(MemoryCategory::OptimizerState), 2 * 4 * n);
  // Read p and g (2 bytes each) and m, v (4 each); write p (2) and m, v (4 each).
  const auto row = counter.op("adamw_step", accounting::Phase::Optimizer);
  EXPECT_EQ(row.bytes_read, n * (2 + 2 + 4 + 4));
  EXPECT_EQ(row.bytes_written, n * (2 + 4 + 4));
  // The state round-trips through a state dict, float32 and all.
  Tensor q = p.detach().clone().requires_grad_();
  AdamW again({q}, AdamWOptions(1e-2));
  again.load_state_dict(adamw.state_dict());
  EXPECT_TRUE(equal(again.state(q)->tensors.at("exp_avg_sq"), s->tensors.at("exp_avg_sq")));
}

TEST(Bfloat16Params, ACruncherTrainsInBfloat16) {
  Generator gen(4);
  nn::Cruncher model(64, 2, TensorOptions(kBFloat16), &gen);
  AdamW adamw(model.parameters(), AdamWOptions(3e-3));
  const Tensor x = randn({256, 64}, TensorOptions(kBFloat16), &gen), y = randn({256}, TensorOptions(kBFloat16), &gen);
  double first = 0, last = 0;
  for (int i = 0; i < 100; ++i) {
    Tensor loss = mse_loss(model.forward(x), y);
    (i == 0 ? first : last) = loss.to(kFloat64).item<double>();
    loss.backward();
    adamw.step();
    adamw.zero_grad();
  }
  EXPECT_LT(last, 0.5 * first);
}

}  // namespace
}  // namespace tally::optim
