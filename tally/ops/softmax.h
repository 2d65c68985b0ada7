#pragma once
// softmax and log_softmax: fused single-pass-over-memory kernels.

#include "tally/core/tensor.h"

namespace tally {

/// exp(x - max) / sum(exp(x - max)) along `dim`.
Tensor softmax(const Tensor& x, int64_t dim);
/// x - max - log(sum(exp(x - max))) along `dim`.
Tensor log_softmax(const Tensor& x, int64_t dim);
/// softmax(scale · scores) along the last dim, with, when `is_causal`, row i of each [..., L, S]
/// matrix seeing columns 0..i only (PyTorch's is_causal); masked entries are 0. Attention's
/// probabilities as one op: scale > 0.
Tensor attention_softmax(const Tensor& scores, double scale, bool is_causal);

namespace ops::detail {
// The row kernels on raw CPU memory, for ops that run softmax on blocks of their own buffers
// (scaled_dot_product_attention); 16-bit rows are computed in float32 and rounded once.

/// Where the rows of a block of matrices are: row ρ starts (ρ / per_batch)·batch_stride +
/// (ρ mod per_batch)·ld elements in; with per_batch 0, plain rows ld apart.
struct RowLayout {
  int64_t ld = 0;
  int64_t per_batch = 0;
  int64_t batch_stride = 0;
};

/// softmax(scale · scores) of `rows` rows of n, with, when causal_rows > 0, row r seeing the
/// columns up to first_row + r mod causal_rows (masked entries 0). probs may be scores.
void attention_probs_rows(Dtype dtype, const void* scores, RowLayout scores_rows, void* probs, RowLayout probs_rows, int64_t rows,
                          int64_t n, int64_t causal_rows, int64_t first_row, double scale);
/// softmax's gradient from its output y along `dim`, dx = scale · y · (g − Σ g·y), as the op
/// softmax's backward rule runs (one row pass on the CPU): for rules composed of ops.
Tensor softmax_backward(const Tensor& g, const Tensor& y, int64_t dim, double scale);
/// The same per row on raw CPU memory.
void softmax_backward_rows(Dtype dtype, const void* g, RowLayout g_rows, const void* y, RowLayout y_rows, void* dx, RowLayout dx_rows,
                           int64_t rows, int64_t n, double scale);

/// The FLOPs softmax declares per element: max, subtract, exp, sum, divide, and the scale's
/// multiply where it is not 1.
constexpr int64_t softmax_flops_per_element(double scale) { return scale == 1 ? 5 : 6; }
/// Its gradient's: g·y, the sum, g − Σ, ×y, and ×scale where it is not 1.
constexpr int64_t softmax_backward_flops_per_element(double scale) { return scale == 1 ? 4 : 5; }
}  // namespace ops::detail

}  // namespace tally
