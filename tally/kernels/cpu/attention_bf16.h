#pragma once
// Attention on bfloat16 with AVX512_BF16 (vdpbf16ps), a flash-attention-style kernel: each
// matrix's scores are made, turned into probabilities and multiplied by the values one block of
// query rows at a time, in registers and L1/L2, never written to memory; under a causal mask a
// block only meets the keys its rows see. scaled_dot_product_attention (ops/attention.cpp) runs it
// where the CPU has the instructions and the problem fits (see attention_bf16_fits).

#include <cstdint>

namespace tally::kernels {

/// Query rows per block, in this kernel and in the op's blocked products on other paths: the
/// FLOPs both declare follow from it.
inline constexpr int64_t kAttentionBlockRows = 64;

/// The keys the query block of `rows` rows from row r0 meets, of S: under a causal mask those up
/// to its last row's (upper-left, as PyTorch's is_causal), else all. Always inlined: this header
/// is also compiled for x86-64-v4 (attention_bf16.cpp), which must emit nothing shared.
[[gnu::always_inline]] inline constexpr int64_t attention_block_keys(int64_t S, int64_t r0, int64_t rows, bool causal) {
  return causal && r0 + rows < S ? r0 + rows : S;
}

/// Query rows per strip: the height of this kernel's product tile. Under a causal mask each strip
/// of a block meets only the keys its own last row sees (attention_block_keys of the strip), and
/// in dk's and dv's products each strip of as many keys meets only the block's query rows at or
/// below its first key: what the mask hides is not computed.
inline constexpr int64_t kAttentionStripRows = 6;

/// The query rows of block [r0, r0 + R) that see key j under a causal mask, from the first.
[[gnu::always_inline]] inline constexpr int64_t attention_first_row_seeing(int64_t j, int64_t r0, bool causal) {
  return causal && j > r0 ? j - r0 : 0;
}

/// What this kernel computes per matrix of L query rows and S keys, in score entries: `scores`
/// for q kᵀ, P v, dP = dout vᵀ and dq = dS k (each query strip times the keys it meets), and
/// `key_strips` for dk = dSᵀ q and dv = Pᵀ dout (each key strip times the query rows that see
/// it). The op's FLOPs are made of these (ops/attention.cpp): without a mask both are L·S.
struct AttentionAreas {
  int64_t scores = 0, key_strips = 0;
};
[[gnu::always_inline]] inline constexpr AttentionAreas attention_bf16_areas(int64_t L, int64_t S, bool causal) {
  AttentionAreas a;
  for (int64_t r0 = 0; r0 < L; r0 += kAttentionBlockRows) {
    const int64_t R = L - r0 < kAttentionBlockRows ? L - r0 : kAttentionBlockRows, e = attention_block_keys(S, r0, R, causal);
    for (int64_t m0 = 0; m0 < R; m0 += kAttentionStripRows) {
      const int64_t rows = R - m0 < kAttentionStripRows ? R - m0 : kAttentionStripRows;
      a.scores += rows * attention_block_keys(S, r0 + m0, rows, causal);
    }
    for (int64_t j0 = 0; j0 < e; j0 += kAttentionStripRows) {
      const int64_t keys = e - j0 < kAttentionStripRows ? e - j0 : kAttentionStripRows;
      a.key_strips += keys * (R - attention_first_row_seeing(j0, r0, causal));
    }
  }
  return a;
}

/// B matrices of q [L, E], k [S, E] and v [S, Ev] (each operand's layout is its Matrices).
struct AttentionProblem {
  int64_t B, L, S, E, Ev;
  bool causal;
  float scale;
};

/// Where an operand's B matrices of elements T lie (T: bfloat16's bits, or float): matrix b's row
/// r starts at data + (b / inner)·outer + (b % inner)·inner_stride + r·row, its elements one
/// after another. Two strides describe the batch dims of a heads view, [b, h, T, E] over
/// [b, T, h, E] memory (flash-attention's layout, as scaled_dot_product_attention_packed takes
/// it), without a copy; B contiguous matrices [B, rows, n] are {data, rows·n, 1, 0, n}.
template <class T>
struct MatricesOf {
  T* data;
  int64_t outer, inner, inner_stride, row;
  /// Matrix b's first element. Always inlined, as attention_block_keys.
  [[gnu::always_inline]] T* operator()(int64_t b) const { return data + (b / inner) * outer + (b % inner) * inner_stride; }
};
using Matrices = MatricesOf<uint16_t>;

/// Whether this build has the kernel (an x86-64 compiler that knows AVX512_BF16); the caller also
/// checks that the CPU has the instructions.
bool attention_bf16_built();
/// Whether a problem suits it: E and Ev even (bfloat16 pairs), L, S, E and Ev at least 1.
bool attention_bf16_fits(const AttentionProblem& p);

/// out [B, L, Ev] = softmax(scale · q kᵀ, causal) v: scores and the softmax in float32, the
/// probabilities rounded to bfloat16 for their product with v, the output rounded once.
void attention_bf16_forward(const AttentionProblem& p, const Matrices& q, const Matrices& k, const Matrices& v, const Matrices& out);

/// dq, dk and dv from dout, recomputing the probabilities as the forward makes them; dk and dv
/// accumulate over the query blocks in float32 and are rounded once.
void attention_bf16_backward(const AttentionProblem& p, const Matrices& q, const Matrices& k, const Matrices& v, const Matrices& dout,
                             const Matrices& dq, const Matrices& dk, const Matrices& dv);

}  // namespace tally::kernels
