#pragma once
// layer_norm and rms_norm, each one op over rows (torch::layer_norm, torch::rms_norm).

#include <optional>

#include "tally/core/int_array_ref.h"
#include "tally/core/tensor.h"

namespace tally {

/// (x − mean) / √(var + eps) over the trailing dims `normalized_shape` of `input`, times `weight`
/// and plus `bias` where defined (each of shape normalized_shape).
Tensor layer_norm(const Tensor& input, IntArrayRef normalized_shape, const Tensor& weight = {}, const Tensor& bias = {},
                  double eps = 1e-5);
/// x / √(mean(x²) + eps) over the trailing dims `normalized_shape`, times `weight` where
/// defined; eps defaults to the dtype's machine epsilon.
Tensor rms_norm(const Tensor& input, IntArrayRef normalized_shape, const Tensor& weight = {}, std::optional<double> eps = std::nullopt);

}  // namespace tally
