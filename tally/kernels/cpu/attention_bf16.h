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

/// B matrices of q [L, E], k [S, E] and v [S, Ev] (each operand's layout is its Matrices).
struct AttentionProblem {
  int64_t B, L, S, E, Ev;
  bool causal;
  float scale;
};

/// Where an operand's B bfloat16 matrices lie: matrix b's row r starts at
/// data + (b / inner)·outer + (b % inner)·inner_stride + r·row, its elements one after another.
/// Two strides describe the batch dims of a heads view, [b, h, T, E] over [b, T, h, E] memory
/// (flash-attention's layout, as scaled_dot_product_attention_packed takes it), without a copy;
/// B contiguous matrices [B, rows, n] are {data, rows·n, 1, 0, n}.
struct Matrices {
  uint16_t* data;
  int64_t outer, inner, inner_stride, row;
  /// Matrix b's first element. Always inlined, as attention_block_keys.
  [[gnu::always_inline]] uint16_t* operator()(int64_t b) const { return data + (b / inner) * outer + (b % inner) * inner_stride; }
};

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
