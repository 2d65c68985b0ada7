#pragma once
// AVX-512 float math used by the hot elementwise and softmax kernels. With no AVX-512 at
// compile time the same names exist over a plain array, so callers are written once.

#include <cstdint>

#if defined(__AVX512F__)
// GCC 12.2's intrinsics headers initialise their "undefined" vectors from themselves and then
// warn about it wherever they are inlined (GCC bug 105593, fixed in 12.3); the warnings point
// into the header, so silencing them around the include keeps them on for our own code.
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wuninitialized"
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#include <immintrin.h>
#pragma GCC diagnostic pop
#endif

namespace tally::kernels {

#if defined(__AVX512F__)
/// 16 floats.
using Vec16f = __m512;
inline Vec16f load(const float* p) { return _mm512_loadu_ps(p); }
inline void store(float* p, Vec16f v) { _mm512_storeu_ps(p, v); }
inline __mmask16 tail_mask(int64_t n) { return static_cast<__mmask16>((1u << n) - 1u); }
/// Load n < 16 floats, zeros elsewhere.
inline Vec16f load_partial(const float* p, int64_t n) { return _mm512_maskz_loadu_ps(tail_mask(n), p); }
/// Store the first n < 16 lanes.
inline void store_partial(float* p, Vec16f v, int64_t n) { _mm512_mask_storeu_ps(p, tail_mask(n), v); }
inline Vec16f splat(float x) { return _mm512_set1_ps(x); }

/// exp(x) to about 1 ulp: 2^n · p(r) with n = round(x / ln 2), r = x − n·ln 2 in two parts and
/// p the degree-7 Taylor polynomial (error < 1e-8 on |r| ≤ ln2/2). scalef handles overflow to
/// inf and underflow to 0; NaN propagates.
inline Vec16f exp(Vec16f x) {
  // Clamp below so that −inf gives 0 rather than NaN from (−inf) − (−inf); NaN passes (2nd operand).
  x = _mm512_max_ps(_mm512_set1_ps(-104.0f), x);
  const Vec16f n = _mm512_roundscale_ps(_mm512_mul_ps(x, _mm512_set1_ps(1.44269504088896341f)),
                                        _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
  Vec16f r = _mm512_fnmadd_ps(n, _mm512_set1_ps(0.693359375f), x);
  r = _mm512_fnmadd_ps(n, _mm512_set1_ps(-2.12194440e-4f), r);
  Vec16f p = _mm512_set1_ps(1.0f / 5040);
  p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(1.0f / 720));
  p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(1.0f / 120));
  p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(1.0f / 24));
  p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(1.0f / 6));
  p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(0.5f));
  p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(1.0f));
  p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(1.0f));
  return _mm512_scalef_ps(p, n);
}
// Horizontal reductions written out: GCC 12's _mm512_reduce_* trip its own uninitialized warnings.
inline __m128 fold_to_128(Vec16f v, __m256 (*op256)(__m256, __m256), __m128 (*op128)(__m128, __m128)) {
  const __m256 lo = _mm512_castps512_ps256(v);
  const __m256 hi = _mm256_castpd_ps(_mm512_extractf64x4_pd(_mm512_castps_pd(v), 1));
  const __m256 s = op256(lo, hi);
  __m128 q = op128(_mm256_castps256_ps128(s), _mm256_extractf128_ps(s, 1));
  q = op128(q, _mm_movehl_ps(q, q));
  return op128(q, _mm_movehdup_ps(q));
}
/// Sum of the 16 lanes.
inline float reduce_add(Vec16f v) {
  return _mm_cvtss_f32(fold_to_128(v, [](__m256 a, __m256 b) { return _mm256_add_ps(a, b); },
                                   [](__m128 a, __m128 b) { return _mm_add_ps(a, b); }));
}
/// Largest of the 16 lanes.
inline float reduce_max(Vec16f v) {
  return _mm_cvtss_f32(fold_to_128(v, [](__m256 a, __m256 b) { return _mm256_max_ps(a, b); },
                                   [](__m128 a, __m128 b) { return _mm_max_ps(a, b); }));
}
inline Vec16f add(Vec16f a, Vec16f b) { return _mm512_add_ps(a, b); }
inline Vec16f mul(Vec16f a, Vec16f b) { return _mm512_mul_ps(a, b); }
inline Vec16f sub(Vec16f a, Vec16f b) { return _mm512_sub_ps(a, b); }
inline Vec16f div(Vec16f a, Vec16f b) { return _mm512_div_ps(a, b); }
inline Vec16f max(Vec16f a, Vec16f b) { return _mm512_max_ps(a, b); }
#else
struct Vec16f { float v[16]; };
#endif

}  // namespace tally::kernels
