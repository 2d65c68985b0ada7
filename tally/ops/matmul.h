#pragma once
// Matrix products with PyTorch's matmul semantics.

#include "tally/core/tensor.h"

namespace tally {

/// torch.matmul: dot for 1-D·1-D, matrix-vector, matrix-matrix, and batched products with
/// broadcast batch dims ((4, 8, 16, 32) @ (32, 2) → (4, 8, 16, 2)). Cost: 2·M·N·K per product.
Tensor matmul(const Tensor& a, const Tensor& b);
/// 2-D matrix product (torch.mm).
Tensor mm(const Tensor& a, const Tensor& b);
/// Batched 3-D product (torch.bmm).
Tensor bmm(const Tensor& a, const Tensor& b);

}  // namespace tally
