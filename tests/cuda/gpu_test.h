#pragma once
// Shared by the GPU tests: skip with the reason when this machine or build has no GPU.

#include <gtest/gtest.h>

#include "tally/tally.h"

#define TALLY_REQUIRE_GPU()                                                                          \
  do {                                                                                               \
    if (!::tally::cuda::is_available())                                                              \
      GTEST_SKIP() << (::tally::cuda::device_count() == 0 ? "no CUDA GPU on this machine, or tally " \
                                                            "was built without CUDA (TALLY_CUDA)"    \
                                                          : "CUDA unavailable");                     \
  } while (0)

namespace tally::testing_gpu {

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

}  // namespace tally::testing_gpu
