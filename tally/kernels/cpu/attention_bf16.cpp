// The AVX512_BF16 attention kernel (attention_bf16.h). This file alone is compiled for
// x86-64-v4 with AVX512_BF16 (CMakeLists.txt) and runs only where the CPU has both, so it must not
// emit anything another file could link to by mistake (Note [CPU kernel dispatch]'s ODR hazard):
// it includes no tally header but its own, uses no standard-library template, and everything but
// the four entry points has internal linkage.
//
// Every product is C (+)= A·B with A bfloat16 rows and B packed in pairs along the inner dim
// (vdpbf16ps multiplies a pair of A by a pair of B per float32 lane and adds both): a tile of
// up to 6 rows × 64 columns of C stays in 24 registers while the inner dim streams through.
// Per matrix (one head of one sequence), with blocks of 64 query rows:
//   forward:  S = q kᵀ (float32), P = softmax(scale·S) rounded to bfloat16, out = P v;
//   backward: S and P again, dP = dout vᵀ, dS = scale·P·(dP − Σ P·dP) rounded to bfloat16,
//             dq = dS k, and dk += dSᵀ q, dv += Pᵀ dout in float32 (dSᵀ and Pᵀ are P and dS
//             with rows interleaved in pairs, the layout the pair product reads them in).
// Under a causal mask each strip of 6 query rows (one tile high) meets only the keys its last
// row sees, and in dk's and dv's products each strip of 6 keys only the rows that see it
// (attention_bf16_areas counts what that leaves, for the op's FLOPs): at T = 256 the products
// cover 51% of the T×T scores where whole blocks of 64 rows covered 62.5%.
// Matrices are spread over the threads; each thread's scratch (packed operands, one block's
// scores) is a few hundred KiB for a GPT head and stays in its L2.

#include "tally/kernels/cpu/attention_bf16.h"

#if defined(__x86_64__) && defined(__AVX512BF16__) && defined(__AVX512BW__) && defined(__AVX512VL__)

#include <omp.h>

#include <cstring>

#include "tally/kernels/cpu/avx512_blocks.h"

namespace tally::kernels {
namespace {

constexpr int64_t kRows = kAttentionBlockRows;

__m512 load_bf16(const uint16_t* p, __mmask16 m) {
  return _mm512_castsi512_ps(_mm512_slli_epi32(_mm512_cvtepu16_epi32(_mm256_maskz_loadu_epi16(m, p)), 16));
}

/// Round to nearest even and store the lanes in `m`.
void store_bf16(uint16_t* p, __m512 x, __mmask16 m) { _mm256_mask_storeu_epi16(p, m, (__m256i)_mm512_cvtneps_pbh(x)); }

/// An A operand: bfloat16 where row i's pair k starts at data + i·row + k·pair (elements).
struct PairRows {
  const uint16_t* data;
  int64_t row, pair;
};

/// C[MR × 16·NV] (+)= A · B over `pairs` pairs of the inner dim; B packed as [pairs][ldb][2];
/// only the first `cols` columns of C are read and written.
template <int MR, int NV>
void tile(int64_t pairs, PairRows a, const uint16_t* b, int64_t ldb, float* c, int64_t ldc, int64_t cols, bool accumulate) {
  __m512 acc[MR][NV];
  for (int i = 0; i < MR; ++i)
    for (int j = 0; j < NV; ++j)
      acc[i][j] = accumulate ? _mm512_maskz_loadu_ps(below(16 * j, cols), c + i * ldc + 16 * j) : _mm512_setzero_ps();
  for (int64_t k = 0; k < pairs; ++k) {
    __m512bh bv[NV];
    for (int j = 0; j < NV; ++j) bv[j] = (__m512bh)_mm512_loadu_si512(b + (k * ldb + 16 * j) * 2);
    for (int i = 0; i < MR; ++i) {
      int32_t pair;
      std::memcpy(&pair, a.data + i * a.row + k * a.pair, sizeof pair);
      const __m512bh av = (__m512bh)_mm512_set1_epi32(pair);
      for (int j = 0; j < NV; ++j) acc[i][j] = _mm512_dpbf16_ps(acc[i][j], av, bv[j]);
    }
  }
  for (int i = 0; i < MR; ++i)
    for (int j = 0; j < NV; ++j) _mm512_mask_storeu_ps(c + i * ldc + 16 * j, below(16 * j, cols), acc[i][j]);
}

using TileFn = void (*)(int64_t, PairRows, const uint16_t*, int64_t, float*, int64_t, int64_t, bool);

template <int MR>
constexpr TileFn kRowTiles[4] = {&tile<MR, 1>, &tile<MR, 2>, &tile<MR, 3>, &tile<MR, 4>};
constexpr const TileFn* kTiles[6] = {kRowTiles<1>, kRowTiles<2>, kRowTiles<3>, kRowTiles<4>, kRowTiles<5>, kRowTiles<6>};

/// What a strip of C's rows [m0, m0 + mr) needs: its columns below n, over the inner pairs
/// [k0, k1). Under a causal mask a strip of query rows needs fewer keys than its block (as
/// columns or as inner pairs), and a strip of keys fewer query rows; the rest is masked out.
struct StripExtent {
  int64_t n, k0, k1;
};

/// C[M × N] (+)= A[M × 2·pairs] · B, B packed in pairs with row length ldb (interleave_rows,
/// transpose_pairs), each strip of kAttentionStripRows rows over its extent(m0, mr) alone: the
/// columns it leaves out of C are not written.
template <class Extent>
void gemm(int64_t M, int64_t N, PairRows a, const uint16_t* b, int64_t ldb, float* c, int64_t ldc, bool accumulate, Extent extent) {
  static_assert(kAttentionStripRows == 6, "the tiles are 6 rows high");
  for (int64_t n0 = 0; n0 < N; n0 += 64) {
    for (int64_t m0 = 0; m0 < M; m0 += 6) {
      const int64_t mr = smaller(6, M - m0);
      const StripExtent x = extent(m0, mr);
      if (n0 >= x.n) continue;
      const int64_t cols = x.n - n0, nv = smaller(4, (cols + 15) / 16);
      const PairRows rows{a.data + m0 * a.row + x.k0 * a.pair, a.row, a.pair};
      kTiles[mr - 1][nv - 1](x.k1 - x.k0, rows, b + (x.k0 * ldb + n0) * 2, ldb, c + m0 * ldc + n0, ldc, cols, accumulate);
    }
  }
}

/// Row-major bfloat16 rows as an A operand (pairs of adjacent elements).
PairRows rows_of(const uint16_t* data, int64_t ld) { return {data, ld, 2}; }

/// Rows r < R of `src` (bfloat16, row length ld) interleaved in pairs of rows over columns c < e:
/// dst[((r/2)·ldt + c)·2 + r%2], a missing last odd row as zeros. As a B operand that is src
/// packed in pairs along its rows; as an A operand, srcᵀ.
void interleave_rows(const uint16_t* src, int64_t ld, int64_t R, int64_t e, uint16_t* dst, int64_t ldt) {
  for (int64_t i = 0; 2 * i < R; ++i) {
    const uint16_t* r0 = src + 2 * i * ld;
    const uint16_t* r1 = 2 * i + 1 < R ? r0 + ld : nullptr;
    each_vector(e, [&](int64_t c, __mmask16 m) {
      const __m512i lo = _mm512_cvtepu16_epi32(_mm256_maskz_loadu_epi16(m, r0 + c));
      const __m512i hi = r1 ? _mm512_slli_epi32(_mm512_cvtepu16_epi32(_mm256_maskz_loadu_epi16(m, r1 + c)), 16) : _mm512_setzero_si512();
      _mm512_mask_storeu_epi32(dst + (i * ldt + c) * 2, m, _mm512_or_si512(lo, hi));
    });
  }
}

/// Zeros into p[from, to).
void zero_halves(uint16_t* p, int64_t from, int64_t to) {
  if (to > from) std::memset(p + from, 0, static_cast<size_t>(to - from) * sizeof(uint16_t));
}

/// One row of probabilities: softmax(scale · s[0..visible)) rounded to bfloat16 into p, zeros
/// from `visible` up to `width`. s is overwritten with the exponentials.
void probabilities_row(float* s, int64_t visible, int64_t width, float scale, uint16_t* p) {
  const __m512 inv = _mm512_set1_ps(exponentials_row(s, visible, scale));
  each_vector(visible, [&](int64_t c, __mmask16 m) { store_bf16(p + c, _mm512_mul_ps(_mm512_maskz_loadu_ps(m, s + c), inv), m); });
  zero_halves(p, visible, width);
}

/// One row of the scores' gradient: ds = scale · p · (dp − Σ p·dp) over the c < e the row sees
/// (dp beyond them is not computed), rounded to bfloat16, zeros from e up to `width`.
void scores_grad_row(const uint16_t* p, const float* dp, int64_t e, int64_t width, float scale, uint16_t* ds) {
  scores_grad_lanes(
      dp, e, scale, [&](int64_t c, __mmask16 m) { return load_bf16(p + c, m); },
      [&](int64_t c, __mmask16 m, __m512 g) { store_bf16(ds + c, g, m); });
  zero_halves(ds, e, width);
}

/// R rows of n bfloat16 (row length ld) copied into contiguous rows of n. The tile reads its A
/// rows from here: rows far apart (the heads of a [b, T, 3, h, E] projection are 3·h·E apart)
/// crowd into a few of L1's sets, which the tile's streaming B operand then evicts.
const uint16_t* contiguous_rows(const uint16_t* src, int64_t ld, int64_t R, int64_t n, uint16_t* dst) {
  if (ld == n) return src;
  for (int64_t r = 0; r < R; ++r) std::memcpy(dst + r * n, src + r * ld, static_cast<size_t>(n) * sizeof(uint16_t));
  return dst;
}

/// `rows` rows of n float32 (row length ld) rounded into bfloat16 rows (row length ldd).
void round_rows(const float* src, int64_t ld, int64_t rows, int64_t n, uint16_t* dst, int64_t ldd) {
  for (int64_t r = 0; r < rows; ++r)
    each_vector(n, [&](int64_t c, __mmask16 m) { store_bf16(dst + r * ldd + c, _mm512_maskz_loadu_ps(m, src + r * ld + c), m); });
}

/// Sizes shared by both passes: S16/E16/Ev16 are packed row lengths, S2 a probabilities row.
struct Dims {
  int64_t S16, E16, Ev16, S2;
  explicit Dims(const AttentionProblem& p)
      : S16(round_up(p.S, 16)), E16(round_up(p.E, 16)), Ev16(round_up(p.Ev, 16)), S2(round_up(p.S, 2)) {}
};

/// The strips of the block of R query rows from r0, as gemm extents under the problem's mask.
struct BlockStrips {
  const AttentionProblem& p;
  int64_t r0, R;
  /// The keys strip [m0, m0 + mr) of the query rows meets.
  int64_t keys(int64_t m0, int64_t mr) const { return attention_block_keys(p.S, r0 + m0, mr, p.causal); }
  /// Query strips with their keys as C's columns (q kᵀ, dP), over all `pairs`.
  auto keys_as_columns(int64_t pairs) const {
    return [this, pairs](int64_t m0, int64_t mr) { return StripExtent{keys(m0, mr), 0, pairs}; };
  }
  /// Query strips with their keys as the inner pairs (P v, dS k), over N columns.
  auto keys_as_pairs(int64_t N) const {
    return [this, N](int64_t m0, int64_t mr) { return StripExtent{N, 0, (keys(m0, mr) + 1) / 2}; };
  }
  /// Key strips (dSᵀ q, Pᵀ dout) over the pairs of the block's rows that see them, N columns.
  auto rows_seeing(int64_t N) const {
    return [this, N](int64_t m0, int64_t) { return StripExtent{N, attention_first_row_seeing(m0, r0, p.causal) / 2, (R + 1) / 2}; };
  }
};

/// Scores and probabilities of one block: S = q_blk kᵀ, P rounded to bfloat16 [R × S2].
void block_probabilities(const AttentionProblem& p, const Dims& d, const uint16_t* q_blk, int64_t ldq, const uint16_t* kt,
                         const BlockStrips& strips, int64_t e, float* s, uint16_t* probs) {
  gemm(strips.R, e, rows_of(q_blk, ldq), kt, d.S16, s, d.S16, false, strips.keys_as_columns(p.E / 2));
  for (int64_t r = 0; r < strips.R; ++r)
    probabilities_row(s + r * d.S16, visible_of(p, strips.r0, r, e), round_up(e, 2), p.scale, probs + r * d.S2);
}

int64_t forward_scratch(const AttentionProblem& p, const Dims& d) {
  return 2 * (p.E * d.S16 + d.S2 * d.Ev16 + kRows * d.S2 + kRows * p.E) + 4 * (kRows * d.S16 + kRows * d.Ev16) + 7 * 64;
}

int64_t backward_scratch(const AttentionProblem& p, const Dims& d) {
  const int64_t halves = p.E * d.S16 + p.Ev * d.S16 + d.S2 * d.E16 + 2 * kRows * d.S2 + 2 * kRows * d.S16 + kRows * (d.E16 + d.Ev16) +
                         kRows * (p.E + p.Ev);
  const int64_t floats = kRows * d.S16 + kRows * d.E16 + p.S * (d.E16 + d.Ev16);
  return 2 * halves + 4 * floats + 18 * 64;
}

}  // namespace

bool attention_bf16_built() { return true; }

bool attention_bf16_fits(const AttentionProblem& p) {
  return p.L >= 1 && p.S >= 1 && p.E >= 2 && p.Ev >= 2 && p.E % 2 == 0 && p.Ev % 2 == 0;
}

void attention_bf16_forward(const AttentionProblem& p, const Matrices& q, const Matrices& k, const Matrices& v, const Matrices& out) {
  const Dims d(p);
  for_each_matrix(p.B, forward_scratch(p, d), [&](Scratch& scratch, int64_t b) {
    uint16_t* kt = scratch.halves(p.E * d.S16);   // kᵀ in pairs along E
    uint16_t* vp = scratch.halves(d.S2 * d.Ev16);  // v in pairs along S
    uint16_t* probs = scratch.halves(kRows * d.S2);
    float* s = scratch.floats(kRows * d.S16);
    float* o = scratch.floats(kRows * d.Ev16);
    uint16_t* q_rows = scratch.halves(kRows * p.E);
    const uint16_t *qb = q(b), *kb = k(b), *vb = v(b);
    transpose_pairs(kb, k.row, p.S, p.E, kt, d.S16);
    interleave_rows(vb, v.row, p.S, p.Ev, vp, d.Ev16);
    for (int64_t r0 = 0; r0 < p.L; r0 += kRows) {
      const int64_t R = smaller(kRows, p.L - r0), e = attention_block_keys(p.S, r0, R, p.causal);
      const BlockStrips strips{p, r0, R};
      block_probabilities(p, d, contiguous_rows(qb + r0 * q.row, q.row, R, p.E, q_rows), p.E, kt, strips, e, s, probs);
      gemm(R, p.Ev, rows_of(probs, d.S2), vp, d.Ev16, o, d.Ev16, false, strips.keys_as_pairs(p.Ev));
      round_rows(o, d.Ev16, R, p.Ev, out(b) + r0 * out.row, out.row);
    }
  });
}

void attention_bf16_backward(const AttentionProblem& p, const Matrices& q, const Matrices& k, const Matrices& v, const Matrices& dout,
                             const Matrices& dq, const Matrices& dk, const Matrices& dv) {
  const Dims d(p);
  for_each_matrix(p.B, backward_scratch(p, d), [&](Scratch& scratch, int64_t b) {
    uint16_t* kt = scratch.halves(p.E * d.S16);    // kᵀ in pairs along E (the scores)
    uint16_t* vt = scratch.halves(p.Ev * d.S16);   // vᵀ in pairs along Ev (dP)
    uint16_t* kp = scratch.halves(d.S2 * d.E16);   // k in pairs along S (dq)
    uint16_t* probs = scratch.halves(kRows * d.S2);
    uint16_t* ds = scratch.halves(kRows * d.S2);
    uint16_t* probs_t = scratch.halves(kRows * d.S16);  // Pᵀ and dSᵀ: rows interleaved in pairs
    uint16_t* ds_t = scratch.halves(kRows * d.S16);
    uint16_t* q_pairs = scratch.halves(kRows * d.E16);  // the block's q and dout in pairs along its rows
    uint16_t* dout_pairs = scratch.halves(kRows * d.Ev16);
    uint16_t* q_rows = scratch.halves(kRows * p.E);  // the block's q and dout rows, contiguous
    uint16_t* dout_rows = scratch.halves(kRows * p.Ev);
    float* s = scratch.floats(kRows * d.S16);  // the scores, then dP
    float* dq_blk = scratch.floats(kRows * d.E16);
    float* dk_acc = scratch.floats(p.S * d.E16);
    float* dv_acc = scratch.floats(p.S * d.Ev16);
    const uint16_t *qb = q(b), *kb = k(b), *vb = v(b), *gb = dout(b);
    transpose_pairs(kb, k.row, p.S, p.E, kt, d.S16);
    transpose_pairs(vb, v.row, p.S, p.Ev, vt, d.S16);
    interleave_rows(kb, k.row, p.S, p.E, kp, d.E16);
    std::memset(dk_acc, 0, static_cast<size_t>(p.S * d.E16) * sizeof(float));
    std::memset(dv_acc, 0, static_cast<size_t>(p.S * d.Ev16) * sizeof(float));
    for (int64_t r0 = 0; r0 < p.L; r0 += kRows) {
      const int64_t R = smaller(kRows, p.L - r0), e = attention_block_keys(p.S, r0, R, p.causal), e2 = round_up(e, 2);
      const uint16_t *q_blk = contiguous_rows(qb + r0 * q.row, q.row, R, p.E, q_rows),
                     *g_blk = contiguous_rows(gb + r0 * dout.row, dout.row, R, p.Ev, dout_rows);
      const BlockStrips strips{p, r0, R};
      block_probabilities(p, d, q_blk, p.E, kt, strips, e, s, probs);
      gemm(R, e, rows_of(g_blk, p.Ev), vt, d.S16, s, d.S16, false, strips.keys_as_columns(p.Ev / 2));  // dP
      for (int64_t r = 0; r < R; ++r)
        scores_grad_row(probs + r * d.S2, s + r * d.S16, visible_of(p, r0, r, e), e2, p.scale, ds + r * d.S2);
      gemm(R, p.E, rows_of(ds, d.S2), kp, d.E16, dq_blk, d.E16, false, strips.keys_as_pairs(p.E));
      round_rows(dq_blk, d.E16, R, p.E, dq(b) + r0 * dq.row, dq.row);
      interleave_rows(probs, d.S2, R, e, probs_t, d.S16);
      interleave_rows(ds, d.S2, R, e, ds_t, d.S16);
      interleave_rows(q_blk, p.E, R, p.E, q_pairs, d.E16);
      interleave_rows(g_blk, p.Ev, R, p.Ev, dout_pairs, d.Ev16);
      gemm(e, p.E, {ds_t, 2, 2 * d.S16}, q_pairs, d.E16, dk_acc, d.E16, true, strips.rows_seeing(p.E));
      gemm(e, p.Ev, {probs_t, 2, 2 * d.S16}, dout_pairs, d.Ev16, dv_acc, d.Ev16, true, strips.rows_seeing(p.Ev));
    }
    round_rows(dk_acc, d.E16, p.S, p.E, dk(b), dk.row);
    round_rows(dv_acc, d.Ev16, p.S, p.Ev, dv(b), dv.row);
  });
}

}  // namespace tally::kernels

#else  // no AVX512_BF16 in this build: the op takes its other path

namespace tally::kernels {
bool attention_bf16_built() { return false; }
bool attention_bf16_fits(const AttentionProblem&) { return false; }
void attention_bf16_forward(const AttentionProblem&, const Matrices&, const Matrices&, const Matrices&, const Matrices&) {}
void attention_bf16_backward(const AttentionProblem&, const Matrices&, const Matrices&, const Matrices&, const Matrices&, const Matrices&,
                             const Matrices&, const Matrices&) {}
}  // namespace tally::kernels

#endif
