#pragma once
// Parameter initialisation (torch.nn.init), with PyTorch's fan computations. Every function fills
// a tensor in place outside any graph and returns it. normal_, uniform_ and trunc_normal_ live
// with the random fills (ops/random.h); the ones here derive their bounds from a tensor's fans.

#include <optional>
#include <string_view>
#include <utility>

#include "tally/core/generator.h"
#include "tally/core/tensor.h"
#include "tally/ops/random.h"

namespace tally::nn::init {

/// (fan_in, fan_out) of a weight: dim 1 and dim 0 sizes, times the receptive field (the product
/// of the dims after the first two). A tensor with fewer than 2 dims has no fans (an error).
std::pair<int64_t, int64_t> calculate_fan_in_and_fan_out(const Tensor& t);
/// The recommended gain for a nonlinearity ("linear", "conv*", "sigmoid", "tanh", "relu",
/// "leaky_relu" with negative slope `param` (0.01 when not given), "selu").
double calculate_gain(std::string_view nonlinearity, std::optional<double> param = std::nullopt);

Tensor& constant_(Tensor& t, double value);
Tensor& zeros_(Tensor& t);
Tensor& ones_(Tensor& t);
/// U(−a, a) with a = gain·√(6 / (fan_in + fan_out)).
Tensor& xavier_uniform_(Tensor& t, double gain = 1.0, Generator* gen = nullptr);
/// N(0, std²) with std = gain·√(2 / (fan_in + fan_out)).
Tensor& xavier_normal_(Tensor& t, double gain = 1.0, Generator* gen = nullptr);
/// U(−b, b) with b = gain·√(3 / fan), fan from `mode` ("fan_in" or "fan_out"), gain from the nonlinearity and `a`.
Tensor& kaiming_uniform_(Tensor& t, double a = 0, std::string_view mode = "fan_in", std::string_view nonlinearity = "leaky_relu",
                         Generator* gen = nullptr);
/// N(0, std²) with std = gain / √fan.
Tensor& kaiming_normal_(Tensor& t, double a = 0, std::string_view mode = "fan_in", std::string_view nonlinearity = "leaky_relu",
                        Generator* gen = nullptr);

}  // namespace tally::nn::init
