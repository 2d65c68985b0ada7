#pragma once
// Matrix products with PyTorch's matmul semantics.

#include "tally/core/scalar.h"
#include "tally/core/tensor.h"

namespace tally {

/// torch.matmul: dot for 1-D·1-D, matrix-vector, matrix-matrix, and batched products with
/// broadcast batch dims ((4, 8, 16, 32) @ (32, 2) → (4, 8, 16, 2)). Cost: 2·M·N·K per product.
Tensor matmul(const Tensor& a, const Tensor& b);
/// matmul written into `out` (resized to the product's shape; Note [Forms] in ops/apply.h).
Tensor& matmul_out(Tensor& out, const Tensor& a, const Tensor& b);
/// beta·self + alpha·(mat1 · mat2) for matrices mat1 (n×k) and mat2 (k×m), self broadcast to n×m
/// (torch.addmm), one op. With beta = alpha = 1, a linear layer's bias and product, the bias is
/// added in the product's epilogue on the CPU (the n×m result written once). beta = 0 ignores
/// self (its NaNs included). Cost: 2·n·k·m, and n·m per scale and add.
Tensor addmm(const Tensor& self, const Tensor& mat1, const Tensor& mat2, Scalar beta = 1, Scalar alpha = 1);
/// 2-D matrix product (torch.mm).
Tensor mm(const Tensor& a, const Tensor& b);
/// Batched 3-D product (torch.bmm).
Tensor bmm(const Tensor& a, const Tensor& b);
/// (a · b) · scale_a · scale_b in `out_dtype`, for float8 a (M×K) and b (K×N) with float32
/// one-element scales (torch._scaled_mm): the FP8 matmul of FP8 training. On the GPU it runs on
/// the FP8 tensor cores (cuBLASLt wants b column-major: pass b as `w.t()` of a row-major N×K `w`,
/// as PyTorch does); on the CPU the operands widen exactly, for a bfloat16 result to bfloat16 on
/// its fastest bfloat16 path (the product rounded to bfloat16 before the scales apply), for a
/// float32 or float16 one to float32 (accumulated and scaled in float32, as cuBLASLt's).
Tensor scaled_mm(const Tensor& a, const Tensor& b, const Tensor& scale_a, const Tensor& scale_b, Dtype out_dtype = kBFloat16);

}  // namespace tally
