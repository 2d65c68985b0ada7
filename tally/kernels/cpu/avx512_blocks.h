#pragma once
// What tally's AVX-512 attention kernels share (attention_bf16.cpp, attention_f32.cpp): masks for
// a row's vectors, e^x, a transpose of 32-bit words in registers (bfloat16 pairs or floats), and
// per-thread scratch for one matrix at a time.
//
// Include it only from a file compiled for x86-64-v4, inside that file's #if on its target's
// macros. Everything here has internal linkage (an unnamed namespace): each such file gets its
// own copy, and nothing built for AVX-512 can be linked into code that runs on a CPU without it
// (Note [CPU kernel dispatch]'s ODR hazard). It includes no other tally header but
// attention_bf16.h, whose functions are always inlined.

#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wuninitialized"
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#include <immintrin.h>
#pragma GCC diagnostic pop

#include <cstdint>
#include <cstdlib>
#include <new>

#include "tally/kernels/cpu/attention_bf16.h"

namespace tally::kernels {
namespace {

inline int64_t round_up(int64_t x, int64_t m) { return (x + m - 1) / m * m; }
inline int64_t smaller(int64_t a, int64_t b) { return a < b ? a : b; }

/// The lanes of a 16-wide vector that hold columns c..c+15 below `limit`.
inline __mmask16 below(int64_t c, int64_t limit) {
  const int64_t n = limit - c;
  return n >= 16 ? static_cast<__mmask16>(0xFFFF) : n <= 0 ? static_cast<__mmask16>(0) : static_cast<__mmask16>((1u << n) - 1);
}

/// body(c, lanes) for the vectors of 16 that cover columns c < n: whole ones with a constant
/// mask, which compiles to unmasked loads and stores, then a masked tail (masked stores cost
/// AMD's cores several times a plain one).
template <class Body>
[[gnu::always_inline]] inline void each_vector(int64_t n, Body body) {
  int64_t c = 0;
  for (; c + 16 <= n; c += 16) body(c, static_cast<__mmask16>(0xFFFF));
  if (c < n) body(c, below(c, n));
}

/// e^x for x ≤ 0 (vec_math.h's exp, which these files cannot include without its ODR hazard,
/// one degree shorter): 2^n·e^r with n = round(x·log2 e) and |r| ≤ ln2/2 by Cody–Waite, e^r by its
/// Taylor polynomial to r⁶ (error below 2⁻²³ there), scaled by vscalefps. Below −87 it gives
/// a value under 2⁻¹²⁵ where the exact one is smaller still: as good as 0 in a sum of at least 1.
/// A NaN stays NaN (vmaxps returns its second operand when either is NaN), so a score made from
/// a NaN spoils its row's probabilities as in PyTorch instead of counting as 0.
inline __m512 exp_nonpositive(__m512 x) {
  x = _mm512_max_ps(_mm512_set1_ps(-87.0f), x);
  const __m512 n =
      _mm512_roundscale_ps(_mm512_mul_ps(x, _mm512_set1_ps(1.44269504088896341f)), _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
  __m512 r = _mm512_fnmadd_ps(n, _mm512_set1_ps(0.693359375f), x);
  r = _mm512_fnmadd_ps(n, _mm512_set1_ps(-2.12194440e-4f), r);
  __m512 p = _mm512_set1_ps(1.0f / 720);
  p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(1.0f / 120));
  p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(1.0f / 24));
  p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(1.0f / 6));
  p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(0.5f));
  p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(1.0f));
  p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(1.0f));
  return _mm512_scalef_ps(p, n);
}

/// The first half of a row's softmax: s[c] = e^(scale·s[c] − max) for c < visible (max over
/// the scaled row), returned with 1 / their sum, which the probabilities are to be scaled by.
inline float exponentials_row(float* s, int64_t visible, float scale) {
  __m512 vmax = _mm512_set1_ps(-__builtin_inff());
  each_vector(visible, [&](int64_t c, __mmask16 m) { vmax = _mm512_max_ps(vmax, _mm512_mask_loadu_ps(vmax, m, s + c)); });
  const __m512 vscale = _mm512_set1_ps(scale), vm = _mm512_set1_ps(_mm512_reduce_max_ps(vmax) * scale);
  __m512 vsum = _mm512_setzero_ps();
  each_vector(visible, [&](int64_t c, __mmask16 m) {
    const __m512 ex = exp_nonpositive(_mm512_fmsub_ps(_mm512_maskz_loadu_ps(m, s + c), vscale, vm));
    _mm512_mask_storeu_ps(s + c, m, ex);
    vsum = _mm512_mask_add_ps(vsum, m, vsum, ex);
  });
  return 1.0f / _mm512_reduce_add_ps(vsum);
}

/// A row of the scores' gradient, ds = scale · p · (dp − Σ p·dp) over the c < e the row sees,
/// handed to store(c, lanes, ds) vector by vector; load_p(c, lanes) reads the probabilities
/// (bfloat16 or float32, as each kernel keeps them).
template <class LoadP, class Store>
[[gnu::always_inline]] inline void scores_grad_lanes(const float* dp, int64_t e, float scale, LoadP load_p, Store store) {
  __m512 vdot = _mm512_setzero_ps();
  each_vector(e, [&](int64_t c, __mmask16 m) { vdot = _mm512_fmadd_ps(load_p(c, m), _mm512_maskz_loadu_ps(m, dp + c), vdot); });
  const __m512 dot = _mm512_set1_ps(_mm512_reduce_add_ps(vdot)), vscale = _mm512_set1_ps(scale);
  each_vector(e, [&](int64_t c, __mmask16 m) {
    store(c, m, _mm512_mul_ps(vscale, _mm512_mul_ps(load_p(c, m), _mm512_sub_ps(_mm512_maskz_loadu_ps(m, dp + c), dot))));
  });
}

/// Sixteen vectors of sixteen 32-bit words transposed in registers: word j of r[i] becomes word
/// i of r[j]. Pairs of words interleave, then pairs of pairs (within each 128-bit lane, which
/// leaves lane L of r[4i + j] holding column 4L + j of rows 4i..4i+3), then the lanes gather.
inline void transpose16(__m512i r[16]) {
  __m512i t[16];
  for (int i = 0; i < 16; i += 2) {
    t[i] = _mm512_unpacklo_epi32(r[i], r[i + 1]);
    t[i + 1] = _mm512_unpackhi_epi32(r[i], r[i + 1]);
  }
  for (int i = 0; i < 16; i += 4) {
    r[i] = _mm512_unpacklo_epi64(t[i], t[i + 2]);
    r[i + 1] = _mm512_unpackhi_epi64(t[i], t[i + 2]);
    r[i + 2] = _mm512_unpacklo_epi64(t[i + 1], t[i + 3]);
    r[i + 3] = _mm512_unpackhi_epi64(t[i + 1], t[i + 3]);
  }
  for (int j = 0; j < 4; ++j) {
    // Lanes 0 and 2 (0x88) or 1 and 3 (0xDD) of one vector, then of the other.
    const __m512i even_lo = _mm512_shuffle_i32x4(r[j], r[4 + j], 0x88), odd_lo = _mm512_shuffle_i32x4(r[j], r[4 + j], 0xDD);
    const __m512i even_hi = _mm512_shuffle_i32x4(r[8 + j], r[12 + j], 0x88), odd_hi = _mm512_shuffle_i32x4(r[8 + j], r[12 + j], 0xDD);
    t[j] = _mm512_shuffle_i32x4(even_lo, even_hi, 0x88);       // column j
    t[8 + j] = _mm512_shuffle_i32x4(even_lo, even_hi, 0xDD);   // column 8 + j
    t[4 + j] = _mm512_shuffle_i32x4(odd_lo, odd_hi, 0x88);     // column 4 + j
    t[12 + j] = _mm512_shuffle_i32x4(odd_lo, odd_hi, 0xDD);    // column 12 + j
  }
  for (int i = 0; i < 16; ++i) r[i] = t[i];
}

/// The N rows of `src` (bfloat16 [N, K] with row length ld, K even) transposed into pairs along
/// K: dst's pair k of column n is elements 2k and 2k + 1 of src's row n, a 32-bit word. As a B
/// operand that is srcᵀ. Blocks of 16 rows × 16 pairs are transposed in registers (a gather per
/// pair took half of the forward's time outside the products). Columns from N up to ldb are
/// left as they are: they only reach lanes of C that are never stored.
inline void transpose_pairs(const uint16_t* src, int64_t ld, int64_t N, int64_t K, uint16_t* dst, int64_t ldb) {
  const int64_t pairs = K / 2;
  for (int64_t n0 = 0; n0 < N; n0 += 16) {
    const int64_t rows = smaller(16, N - n0);
    for (int64_t k0 = 0; k0 < pairs; k0 += 16) {
      const __mmask16 m = below(k0, pairs);
      __m512i r[16];
      for (int64_t i = 0; i < 16; ++i)
        r[i] = i < rows ? _mm512_maskz_loadu_epi32(m, src + (n0 + i) * ld + 2 * k0) : _mm512_setzero_si512();
      transpose16(r);
      const __mmask16 cols = below(n0, N);
      for (int64_t j = 0; j < 16 && k0 + j < pairs; ++j) _mm512_mask_storeu_epi32(dst + ((k0 + j) * ldb + n0) * 2, cols, r[j]);
    }
  }
}

/// The keys row r of the block at r0 sees, of its block's e.
inline int64_t visible_of(const AttentionProblem& p, int64_t r0, int64_t r, int64_t e) { return p.causal ? smaller(e, r0 + r + 1) : e; }

/// A thread's scratch, carved in 64-byte pieces out of a buffer the thread keeps between calls
/// (a training loop asks for the same sizes every step: no allocation, no fresh pages to fault in).
class Scratch {
 public:
  explicit Scratch(int64_t bytes) {
    thread_local char* buffer = nullptr;
    thread_local int64_t capacity = 0;
    bytes = round_up(bytes, 64);
    if (capacity < bytes) {
      std::free(buffer);
      buffer = static_cast<char*>(std::aligned_alloc(64, static_cast<size_t>(bytes)));
      capacity = buffer ? bytes : 0;
    }
    base_ = buffer;
  }
  bool ok() const { return base_ != nullptr; }
  uint16_t* halves(int64_t n) { return static_cast<uint16_t*>(take(2 * n)); }
  float* floats(int64_t n) { return static_cast<float*>(take(4 * n)); }

 private:
  void* take(int64_t bytes) {
    void* p = base_ + used_;
    used_ += round_up(bytes, 64);
    return p;
  }
  char* base_;
  int64_t used_ = 0;
};

/// body(scratch, b) for every matrix b < B, spread over the threads, each call with a fresh carve
/// of its thread's scratch of `bytes`; std::bad_alloc when a thread could not get it.
template <class Body>
void for_each_matrix(int64_t B, int64_t bytes, Body body) {
  bool failed = false;
#pragma omp parallel for schedule(static) if (B > 1)
  for (int64_t b = 0; b < B; ++b) {
    Scratch scratch(bytes);
    if (!scratch.ok()) {
#pragma omp atomic write
      failed = true;
      continue;
    }
    body(scratch, b);
  }
  if (failed) throw std::bad_alloc();
}

}  // namespace
}  // namespace tally::kernels
