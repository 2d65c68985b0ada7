// The float32 attention kernel (attention_f32.h). This file alone is compiled for x86-64-v4
// (CMakeLists.txt) and runs only where the avx512 kernel set runs, so, like attention_bf16.cpp,
// it includes no tally header but its own and avx512_blocks.h, and everything but the three
// entry points has internal linkage.
//
// Every product is C (+)= A·B in tiles of up to 6 rows × 64 columns of C held in 24 registers:
// per step of the inner dim, B's row is four vectors and each of A's six elements is broadcast
// into a multiply-add with them. A is read at any two strides (a matrix or its transpose: dSᵀ
// and Pᵀ are P and dS read down their columns), B's rows where they lie (v, k, q, dout) or, for
// kᵀ and vᵀ, transposed once per matrix. Per matrix, with blocks of 64 query rows:
//   forward:  S = q kᵀ, P = softmax(scale·S) in place, out = P v written where it lies;
//   backward: S and P again, dP = dout vᵀ, dS = scale·P·(dP − Σ P·dP) in place,
//             dq = dS k, and dk += dSᵀ q, dv += Pᵀ dout straight into the gradients.
// Matrices are spread over the threads; a thread's scratch is kᵀ (and vᵀ) and one block's
// scores, a few hundred KiB for a GPT head.

#include "tally/kernels/cpu/attention_f32.h"

#if defined(__x86_64__) && defined(__AVX512F__) && defined(__AVX512BW__) && defined(__AVX512DQ__) && defined(__AVX512VL__)

#include <omp.h>

#include <cstring>

#include "tally/kernels/cpu/avx512_blocks.h"

namespace tally::kernels {
namespace {

using FloatMatrices = MatricesOf<float>;

constexpr int64_t kRows = kAttentionBlockRows;
constexpr int kTileRows = 6, kTileVectors = 4;

/// A float32 operand read at two strides: element (i, k) at data[i·row + k·col].
struct Operand {
  const float* data;
  int64_t row, col;
};

/// C[MR × 16·NV] (+)= A · B over `inner`, B's row k at b + k·ldb; columns from `cols` on are
/// neither read (of B or C) nor written. B's vectors are plain loads but for the last one of a
/// Partial tile: with a mask on every load, GCC kept the accumulators on the stack and the
/// kernel ran 1.7 times slower.
template <int MR, int NV, bool Partial>
void tile(int64_t inner, Operand a, const float* b, int64_t ldb, float* c, int64_t ldc, int64_t cols, bool accumulate) {
  __m512 acc[MR][NV];
  for (int i = 0; i < MR; ++i)
    for (int j = 0; j < NV; ++j)
      acc[i][j] = accumulate ? _mm512_maskz_loadu_ps(below(16 * j, cols), c + i * ldc + 16 * j) : _mm512_setzero_ps();
  const __mmask16 last = below(16 * (NV - 1), cols);
  for (int64_t k = 0; k < inner; ++k) {
    __m512 bv[NV];
    for (int j = 0; j < NV; ++j)
      bv[j] = Partial && j == NV - 1 ? _mm512_maskz_loadu_ps(last, b + k * ldb + 16 * j) : _mm512_loadu_ps(b + k * ldb + 16 * j);
    for (int i = 0; i < MR; ++i) {
      const __m512 av = _mm512_set1_ps(a.data[i * a.row + k * a.col]);
      for (int j = 0; j < NV; ++j) acc[i][j] = _mm512_fmadd_ps(av, bv[j], acc[i][j]);
    }
  }
  for (int i = 0; i < MR; ++i)
    for (int j = 0; j < NV; ++j) _mm512_mask_storeu_ps(c + i * ldc + 16 * j, below(16 * j, cols), acc[i][j]);
}

using TileFn = void (*)(int64_t, Operand, const float*, int64_t, float*, int64_t, int64_t, bool);

template <int MR, bool Partial>
constexpr TileFn kRowTiles[kTileVectors] = {&tile<MR, 1, Partial>, &tile<MR, 2, Partial>, &tile<MR, 3, Partial>, &tile<MR, 4, Partial>};
template <bool Partial>
constexpr const TileFn* kTilesOf[kTileRows] = {kRowTiles<1, Partial>, kRowTiles<2, Partial>, kRowTiles<3, Partial>,
                                               kRowTiles<4, Partial>, kRowTiles<5, Partial>, kRowTiles<6, Partial>};
constexpr const TileFn* const* kTiles[2] = {kTilesOf<false>, kTilesOf<true>};

/// C[M × N] (+)= A[M × inner] · B[inner × N], B's row k at b + k·ldb.
void gemm(int64_t M, int64_t N, int64_t inner, Operand a, const float* b, int64_t ldb, float* c, int64_t ldc, bool accumulate) {
  constexpr int64_t kCols = 16 * kTileVectors;
  for (int64_t n0 = 0; n0 < N; n0 += kCols) {
    const int64_t cols = smaller(kCols, N - n0);
    for (int64_t m0 = 0; m0 < M; m0 += kTileRows)
      kTiles[cols % 16 != 0][smaller(kTileRows, M - m0) - 1][(cols + 15) / 16 - 1](inner, {a.data + m0 * a.row, a.row, a.col}, b + n0, ldb,
                                                                                    c + m0 * ldc + n0, ldc, cols, accumulate);
  }
}

/// The rows of one matrix [N, K] (row length ld) transposed into dst [K, ldt]: the 32-bit words
/// that bfloat16's pairs are, one float each.
void transpose(const float* src, int64_t ld, int64_t N, int64_t K, float* dst, int64_t ldt) {
  transpose_pairs(reinterpret_cast<const uint16_t*>(src), 2 * ld, N, 2 * K, reinterpret_cast<uint16_t*>(dst), ldt);
}

/// One row of probabilities in place: softmax(scale · s[0..visible)), zeros from `visible` up
/// to `width`.
void probabilities_row(float* s, int64_t visible, int64_t width, float scale) {
  const __m512 inv = _mm512_set1_ps(exponentials_row(s, visible, scale));
  each_vector(visible, [&](int64_t c, __mmask16 m) { _mm512_mask_storeu_ps(s + c, m, _mm512_mul_ps(_mm512_maskz_loadu_ps(m, s + c), inv)); });
  if (width > visible) std::memset(s + visible, 0, static_cast<size_t>(width - visible) * sizeof(float));
}

/// One row of the scores' gradient in place of dP: ds = scale · p · (dp − Σ p·dp) over the c < e
/// the row sees, zeros from e up to `width`.
void scores_grad_row(const float* p, float* dp, int64_t e, int64_t width, float scale) {
  // Each vector of dp is read (twice) before its ds is stored over it.
  scores_grad_lanes(
      dp, e, scale, [&](int64_t c, __mmask16 m) { return _mm512_maskz_loadu_ps(m, p + c); },
      [&](int64_t c, __mmask16 m, __m512 g) { _mm512_mask_storeu_ps(dp + c, m, g); });
  if (width > e) std::memset(dp + e, 0, static_cast<size_t>(width - e) * sizeof(float));
}

/// One block's probabilities: S = q_blk kᵀ over the e keys it meets, then softmax row by row.
void block_probabilities(const AttentionProblem& p, const float* q_blk, int64_t ldq, const float* kt, int64_t ldk, int64_t r0, int64_t R,
                         int64_t e, float* s) {
  gemm(R, e, p.E, {q_blk, ldq, 1}, kt, ldk, s, ldk, false);
  for (int64_t r = 0; r < R; ++r) probabilities_row(s + r * ldk, visible_of(p, r0, r, e), e, p.scale);
}

}  // namespace

bool attention_f32_built() { return true; }

void attention_f32_forward(const AttentionProblem& p, const FloatMatrices& q, const FloatMatrices& k, const FloatMatrices& v,
                           const FloatMatrices& out) {
  const int64_t S16 = round_up(p.S, 16);
  for_each_matrix(p.B, 4 * (p.E * S16 + kRows * S16) + 2 * 64, [&](Scratch& scratch, int64_t b) {
    float* kt = scratch.floats(p.E * S16);  // kᵀ, a row per feature
    float* s = scratch.floats(kRows * S16);  // a block's scores, then its probabilities
    transpose(k(b), k.row, p.S, p.E, kt, S16);
    for (int64_t r0 = 0; r0 < p.L; r0 += kRows) {
      const int64_t R = smaller(kRows, p.L - r0), e = attention_block_keys(p.S, r0, R, p.causal);
      block_probabilities(p, q(b) + r0 * q.row, q.row, kt, S16, r0, R, e, s);
      gemm(R, p.Ev, e, {s, S16, 1}, v(b), v.row, out(b) + r0 * out.row, out.row, false);
    }
  });
}

void attention_f32_backward(const AttentionProblem& p, const FloatMatrices& q, const FloatMatrices& k, const FloatMatrices& v,
                            const FloatMatrices& dout, const FloatMatrices& dq, const FloatMatrices& dk, const FloatMatrices& dv) {
  const int64_t S16 = round_up(p.S, 16);
  for_each_matrix(p.B, 4 * ((p.E + p.Ev) * S16 + 2 * kRows * S16) + 4 * 64, [&](Scratch& scratch, int64_t b) {
    float* kt = scratch.floats(p.E * S16);   // kᵀ (the scores)
    float* vt = scratch.floats(p.Ev * S16);  // vᵀ (dP)
    float* s = scratch.floats(kRows * S16);  // the block's probabilities
    float* ds = scratch.floats(kRows * S16);  // dP, then dS
    transpose(k(b), k.row, p.S, p.E, kt, S16);
    transpose(v(b), v.row, p.S, p.Ev, vt, S16);
    float *dkb = dk(b), *dvb = dv(b);
    for (int64_t r = 0; r < p.S; ++r) {  // dk and dv accumulate over the blocks; keys no block meets keep 0
      std::memset(dkb + r * dk.row, 0, static_cast<size_t>(p.E) * sizeof(float));
      std::memset(dvb + r * dv.row, 0, static_cast<size_t>(p.Ev) * sizeof(float));
    }
    for (int64_t r0 = 0; r0 < p.L; r0 += kRows) {
      const int64_t R = smaller(kRows, p.L - r0), e = attention_block_keys(p.S, r0, R, p.causal);
      const float *q_blk = q(b) + r0 * q.row, *g_blk = dout(b) + r0 * dout.row;
      block_probabilities(p, q_blk, q.row, kt, S16, r0, R, e, s);
      gemm(R, e, p.Ev, {g_blk, dout.row, 1}, vt, S16, ds, S16, false);  // dP
      for (int64_t r = 0; r < R; ++r) scores_grad_row(s + r * S16, ds + r * S16, visible_of(p, r0, r, e), e, p.scale);
      gemm(R, p.E, e, {ds, S16, 1}, k(b), k.row, dq(b) + r0 * dq.row, dq.row, false);  // dq = dS k
      gemm(e, p.E, R, {ds, 1, S16}, q_blk, q.row, dkb, dk.row, true);                  // dk += dSᵀ q
      gemm(e, p.Ev, R, {s, 1, S16}, g_blk, dout.row, dvb, dv.row, true);               // dv += Pᵀ dout
    }
  });
}

}  // namespace tally::kernels

#else  // not built for x86-64-v4: the op takes its other path

namespace tally::kernels {
bool attention_f32_built() { return false; }
void attention_f32_forward(const AttentionProblem&, const MatricesOf<float>&, const MatricesOf<float>&, const MatricesOf<float>&,
                           const MatricesOf<float>&) {}
void attention_f32_backward(const AttentionProblem&, const MatricesOf<float>&, const MatricesOf<float>&, const MatricesOf<float>&,
                            const MatricesOf<float>&, const MatricesOf<float>&, const MatricesOf<float>&, const MatricesOf<float>&) {}
}  // namespace tally::kernels

#endif
