#pragma once
// Shared by the GPU tests: skip with the reason when this machine or build has no GPU.

#include <gtest/gtest.h>

#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "tally/tally.h"

#define TALLY_REQUIRE_GPU()                                                                          \
  do {                                                                                               \
    if (!::tally::cuda::is_available())                                                              \
      GTEST_SKIP() << (::tally::cuda::device_count() == 0 ? "no CUDA GPU on this machine, or tally " \
                                                            "was built without CUDA (TALLY_CUDA)"    \
                                                          : "CUDA unavailable");                     \
  } while (0)

namespace tally::testing_gpu {

inline const Device kGpu("cuda:0");

/// Random values of `d` from `seed`: normals times `scale` for floats (with `positive`, their
/// magnitudes plus 0.1), small non-negative integers for ints, coin flips for bool.
inline Tensor sample(IntArrayRef sizes, Dtype d, uint64_t seed, bool positive = false, double scale = 3) {
  Generator g(seed);
  Tensor t = randn(sizes, kFloat64, &g) * scale;
  if (positive) t = t.abs() + 0.1;
  if (d == kBool) return t > 0;
  if (!is_floating_point(d)) t = (positive ? t : t.abs()).clamp(0, 100);
  return t.to(d);
}

/// Tolerance for one op's result in `d` on two devices (the same maths, another rounding order).
inline double tolerance(Dtype d) {
  switch (d) {
    case kFloat16: return 2e-3;
    case kBFloat16: return 1.6e-2;
    case kFloat32: return 2e-6;
    default: return 1e-12;
  }
}

/// Whether the GPU result equals the CPU one: exactly for integers and bool, within `rtol` (and
/// the same `atol`) for floats, NaNs where NaNs are.
inline ::testing::AssertionResult same_as_cpu(const Tensor& gpu, const Tensor& cpu, double rtol, double atol = -1) {
  if (!gpu.is_cuda()) return ::testing::AssertionFailure() << "result is on " << gpu.device() << ", not the GPU";
  Tensor g = gpu.cpu();
  if (g.dtype() != cpu.dtype())
    return ::testing::AssertionFailure() << "dtype " << g.dtype() << " on the GPU, " << cpu.dtype() << " on the CPU";
  if (!(g.sizes() == cpu.sizes())) return ::testing::AssertionFailure() << "shape " << g.sizes() << " vs " << cpu.sizes();
  if (!cpu.is_floating_point()) {
    if (g.equal(cpu)) return ::testing::AssertionSuccess();
    return ::testing::AssertionFailure() << "GPU " << g << "\nCPU " << cpu;
  }
  if (g.allclose(cpu, rtol, atol < 0 ? rtol : atol, /*equal_nan=*/true)) return ::testing::AssertionSuccess();
  Tensor diff = (g.to(kFloat64) - cpu.to(kFloat64)).abs();
  const double worst = diff.masked_fill(diff != diff, 0).max().item<double>();
  return ::testing::AssertionFailure() << "max |GPU - CPU| " << worst << "\nGPU " << g << "\nCPU " << cpu;
}

/// Runs `f` on leaves made from `inputs` on `device` and returns its output then each input's
/// gradient for the loss sum(output · weights), weights fixed standard normals of the output's shape.
template <class F>
std::vector<Tensor> forward_backward(F f, const std::vector<Tensor>& inputs, const Device& device) {
  std::vector<Tensor> leaves;
  for (const Tensor& t : inputs) leaves.push_back(t.to(device).detach().requires_grad_());
  Tensor out = f(leaves);
  Tensor weights = sample(out.sizes(), kFloat64, 99, false, 1).to(out.dtype()).to(device);
  (out * weights).sum().backward();
  std::vector<Tensor> results = {out.detach()};
  for (const Tensor& l : leaves) results.push_back(l.grad());
  return results;
}

/// f's output and its inputs' gradients on the GPU against the CPU's.
template <class F>
void expect_same_on_both(F f, const std::vector<Tensor>& inputs, double rtol, double atol) {
  const std::vector<Tensor> cpu = forward_backward(f, inputs, Device(kCPU));
  const std::vector<Tensor> gpu = forward_backward(f, inputs, kGpu);
  for (size_t i = 0; i < cpu.size(); ++i) {
    SCOPED_TRACE(i == 0 ? std::string("output") : "gradient of input " + std::to_string(i - 1));
    if (!cpu[i].defined()) {
      EXPECT_FALSE(gpu[i].defined());
      continue;
    }
    EXPECT_TRUE(same_as_cpu(gpu[i], cpu[i], rtol, atol));
  }
}

/// A module built on the CPU in float64 from `seed`, and a copy of it on the GPU with the same
/// weights.
template <class M, class Config>
std::pair<std::unique_ptr<M>, std::unique_ptr<M>> cpu_and_gpu(const Config& config, uint64_t seed) {
  Generator gen(seed);
  auto cpu = std::make_unique<M>(config, TensorOptions(kFloat64), &gen);
  auto gpu = std::make_unique<M>(config, TensorOptions(kFloat64).device(kGpu));
  gpu->load_state_dict(cpu->state_dict());
  return {std::move(cpu), std::move(gpu)};
}

/// Every parameter of `gpu` (or its gradient, with `grads`) against the one of the same name in `cpu`.
inline void expect_same_parameters(const nn::Module& gpu, const nn::Module& cpu, bool grads, double rtol, double atol) {
  const auto on_gpu = gpu.named_parameters(), on_cpu = cpu.named_parameters();  // kept: the loop reads into them
  for (const auto& [name, p] : on_cpu.items()) {
    SCOPED_TRACE(name);
    const Tensor& g = on_gpu[name];
    EXPECT_TRUE(same_as_cpu(grads ? g.grad() : g.detach(), grads ? p.grad() : p.detach(), rtol, atol));
  }
}

}  // namespace tally::testing_gpu
