#pragma once
// Random tensors and the initialisers built on them.

#include "tally/core/generator.h"
#include "tally/core/tensor.h"
#include "tally/core/tensor_options.h"

namespace tally {

/// Uniform on [0, 1).
Tensor rand(IntArrayRef sizes, TensorOptions options = {}, Generator* gen = nullptr);
/// Standard normal.
Tensor randn(IntArrayRef sizes, TensorOptions options = {}, Generator* gen = nullptr);
/// Integers uniform on [low, high) (int64 unless options say otherwise).
Tensor randint(int64_t low, int64_t high, IntArrayRef sizes, TensorOptions options = {}, Generator* gen = nullptr);
/// Integers uniform on [0, high).
Tensor randint(int64_t high, IntArrayRef sizes, TensorOptions options = {}, Generator* gen = nullptr);

namespace nn::init {
/// Fill with N(mean, std²) truncated to the absolute bounds [a, b] (torch.nn.init.trunc_normal_).
Tensor& trunc_normal_(Tensor& t, double mean = 0, double std = 1, double a = -2, double b = 2, Generator* gen = nullptr);
/// Fill with N(mean, std²).
Tensor& normal_(Tensor& t, double mean = 0, double std = 1, Generator* gen = nullptr);
/// Fill with U(a, b).
Tensor& uniform_(Tensor& t, double a = 0, double b = 1, Generator* gen = nullptr);
}  // namespace nn::init

}  // namespace tally
