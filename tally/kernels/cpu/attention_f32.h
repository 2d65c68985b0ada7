#pragma once
// Attention on float32 with AVX-512 (FMA), the bfloat16 kernel's structure (attention_bf16.h)
// for the dtype tally trains in by default: each matrix's scores are made, turned into
// probabilities and multiplied by the values one block of query rows at a time, in L1/L2,
// never written to memory; backward recomputes them the same way. Under a causal mask a block
// meets only the keys its last row sees, as on the blocked path, so both declare the same FLOPs.
// scaled_dot_product_attention (ops/attention.cpp) runs it where the avx512 kernel set runs.

#include "tally/kernels/cpu/attention_bf16.h"

namespace tally::kernels {

/// Whether this build has the kernel (an x86-64 compiler that targets x86-64-v4); the caller
/// also checks that the CPU runs the avx512 kernel set.
bool attention_f32_built();

/// out [B, L, Ev] = softmax(scale · q kᵀ, causal) v, all in float32. L, S, E and Ev at least 1.
void attention_f32_forward(const AttentionProblem& p, const MatricesOf<float>& q, const MatricesOf<float>& k, const MatricesOf<float>& v,
                           const MatricesOf<float>& out);

/// dq, dk and dv from dout, recomputing the probabilities as the forward makes them.
void attention_f32_backward(const AttentionProblem& p, const MatricesOf<float>& q, const MatricesOf<float>& k, const MatricesOf<float>& v,
                            const MatricesOf<float>& dout, const MatricesOf<float>& dq, const MatricesOf<float>& dk,
                            const MatricesOf<float>& dv);

}  // namespace tally::kernels
