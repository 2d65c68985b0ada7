#pragma once
// 16-float vector math used by the hot elementwise, reduction and softmax kernels, written once
// over three targets chosen at compile time: AVX-512 (one __m512), AVX2 + FMA (two __m256), and
// plain arrays of 16 floats (which the compiler vectorises with what it has). All three compute
// the same operations in the same order, so results agree bit for bit whichever target a build
// has, exp included; only the plain target on a CPU without FMA rounds a·b + c twice and lands
// within an ulp instead (checked by tests/kernels/test_vec_math_portable.cpp).
//
// Each target lives in its own inline namespace, TALLY_CPU_TARGET (kernels/cpu/target.h): a
// program mixes translation units built for different targets (the kernel passes of a portable
// build, Note [CPU kernel dispatch]; that test, built for baseline x86-64 inside any build), and
// the different `Vec16f` and function definitions must not share mangled names, or the linker
// would keep one definition for all.

#include <bit>
#include <cmath>
#include <cstdint>

#include "tally/dtype/half.h"
#include "tally/kernels/cpu/target.h"

#if TALLY_CPU_LEVEL >= 1
#define TALLY_VEC_MATH_X86 1
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

// exp(x) within 1 ulp of the correctly rounded result for every float x (checked over all 2^32),
// by the same steps on every target: 2^n · p(r) with n = round(x / ln 2), r = x − n·ln 2 in two
// parts (the first, kLn2Hi, has few enough bits that n·kLn2Hi is exact) and p the degree-7 Taylor
// polynomial (error < 1e-8 on |r| ≤ ln2/2).
namespace exp_constants {
inline constexpr float kLog2e = 1.44269504088896341f;
inline constexpr float kLn2Hi = 0.693359375f;
inline constexpr float kLn2Lo = -2.12194440e-4f;
// Below this exp is 0 in float32 (the smallest denormal is e^−103.3), and clamping keeps −inf
// from giving NaN through (−inf) − (−inf).
inline constexpr float kMinArg = -104.0f;
// Above this exp is inf. Without the clamp a large x breaks the reduction (n·kLn2Hi is no longer
// exact, so r is not small and p(r) is garbage: exp(1e8) came out −inf), and the targets without
// scalef build 2^n from exponent bits, which must stay in range (|n| ≤ 150: two factors in 2^±75).
inline constexpr float kMaxArg = 104.0f;
}  // namespace exp_constants

inline namespace TALLY_CPU_TARGET {

#if defined(TALLY_VEC_MATH_X86)
namespace vec_detail {
// Horizontal reductions written out (GCC 12's _mm512_reduce_* trip its own uninitialized warnings),
// in one order for both x86 targets: halves, then quarters, then pairs, then the last two lanes.
template <class Op256, class Op128>
float fold_halves(__m256 lo, __m256 hi, Op256 op256, Op128 op128) {
  const __m256 s = op256(lo, hi);
  __m128 q = op128(_mm256_castps256_ps128(s), _mm256_extractf128_ps(s, 1));
  q = op128(q, _mm_movehl_ps(q, q));
  return _mm_cvtss_f32(op128(q, _mm_movehdup_ps(q)));
}
}  // namespace vec_detail
#endif

#if TALLY_CPU_LEVEL == 2

/// 16 floats.
using Vec16f = __m512;
inline Vec16f load(const float* p) { return _mm512_loadu_ps(p); }
inline void store(float* p, Vec16f v) { _mm512_storeu_ps(p, v); }
inline __mmask16 tail_mask(int64_t n) { return static_cast<__mmask16>((1u << n) - 1u); }
/// Load n < 16 floats, zeros elsewhere.
inline Vec16f load_partial(const float* p, int64_t n) { return _mm512_maskz_loadu_ps(tail_mask(n), p); }
/// Store the first n < 16 lanes.
inline void store_partial(float* p, Vec16f v, int64_t n) { _mm512_mask_storeu_ps(p, tail_mask(n), v); }
/// Store bypassing the caches; p must be 64-byte aligned. Follow a run of these with stream_fence().
inline void stream(float* p, Vec16f v) { _mm512_stream_ps(p, v); }
inline Vec16f splat(float x) { return _mm512_set1_ps(x); }

/// exp of each lane (the method is above exp_constants). scalef handles overflow to inf and
/// underflow to 0 with one rounding; NaN propagates.
inline Vec16f exp(Vec16f x) {
  using namespace exp_constants;
  // min/max return their second operand for NaN, so NaN passes both clamps.
  x = _mm512_min_ps(_mm512_set1_ps(kMaxArg), _mm512_max_ps(_mm512_set1_ps(kMinArg), x));
  const Vec16f n = _mm512_roundscale_ps(_mm512_mul_ps(x, _mm512_set1_ps(kLog2e)),
                                        _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
  Vec16f r = _mm512_fnmadd_ps(n, _mm512_set1_ps(kLn2Hi), x);
  r = _mm512_fnmadd_ps(n, _mm512_set1_ps(kLn2Lo), r);
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
inline __m256 low_half(Vec16f v) { return _mm512_castps512_ps256(v); }
inline __m256 high_half(Vec16f v) { return _mm256_castpd_ps(_mm512_extractf64x4_pd(_mm512_castps_pd(v), 1)); }
inline Vec16f add(Vec16f a, Vec16f b) { return _mm512_add_ps(a, b); }
inline Vec16f mul(Vec16f a, Vec16f b) { return _mm512_mul_ps(a, b); }
inline Vec16f sub(Vec16f a, Vec16f b) { return _mm512_sub_ps(a, b); }
inline Vec16f div(Vec16f a, Vec16f b) { return _mm512_div_ps(a, b); }
inline Vec16f max(Vec16f a, Vec16f b) { return _mm512_max_ps(a, b); }
inline Vec16f min(Vec16f a, Vec16f b) { return _mm512_min_ps(a, b); }
inline Vec16f sqrt(Vec16f a) { return _mm512_sqrt_ps(a); }
inline Vec16f nan_or(Vec16f a, Vec16f r) { return _mm512_mask_blend_ps(_mm512_cmp_ps_mask(a, a, _CMP_UNORD_Q), r, a); }

/// 16 bfloat16 (their bits) widened to float32: the bits move to the top half of each lane.
inline Vec16f load_bf16(const uint16_t* p) {
  return _mm512_castsi512_ps(_mm512_slli_epi32(_mm512_cvtepu16_epi32(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(p))), 16));
}
/// 16 floats rounded to bfloat16 as detail::float_to_bfloat16_bits does: to nearest even, a NaN
/// kept quiet.
inline void store_bf16(uint16_t* p, Vec16f v) {
  const __m512i b = _mm512_castps_si512(v);
  const __m512i lsb = _mm512_and_si512(_mm512_srli_epi32(b, 16), _mm512_set1_epi32(1));
  const __m512i rounded = _mm512_srli_epi32(_mm512_add_epi32(b, _mm512_add_epi32(_mm512_set1_epi32(0x7FFF), lsb)), 16);
  const __m512i quiet = _mm512_or_si512(_mm512_srli_epi32(b, 16), _mm512_set1_epi32(0x40));
  const __m512i r = _mm512_mask_blend_epi32(_mm512_cmp_ps_mask(v, v, _CMP_UNORD_Q), rounded, quiet);
  _mm256_storeu_si256(reinterpret_cast<__m256i*>(p), _mm512_cvtepi32_epi16(r));
}
/// 16 float16 (their bits) widened to float32, and back rounded to nearest even (F16C).
inline Vec16f load_f16(const uint16_t* p) { return _mm512_cvtph_ps(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(p))); }
inline void store_f16(uint16_t* p, Vec16f v) {
  _mm256_storeu_si256(reinterpret_cast<__m256i*>(p), _mm512_cvtps_ph(v, _MM_FROUND_TO_NEAREST_INT));
}

#elif TALLY_CPU_LEVEL == 1

/// 16 floats: lanes 0-7 in lo, 8-15 in hi, as the halves of a __m512.
struct Vec16f {
  __m256 lo, hi;
};
inline Vec16f load(const float* p) { return {_mm256_loadu_ps(p), _mm256_loadu_ps(p + 8)}; }
inline void store(float* p, Vec16f v) {
  _mm256_storeu_ps(p, v.lo);
  _mm256_storeu_ps(p + 8, v.hi);
}
/// All-ones in lanes [0, n) of 8; n may lie outside 0..8.
inline __m256i lane_mask(int64_t n) {
  return _mm256_cmpgt_epi32(_mm256_set1_epi32(static_cast<int>(n)), _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7));
}
// Masked-off lanes are not touched, so neither a load nor a store reaches past p + n; the high
// half is skipped outright when empty, so p + 8 is only formed inside the buffer.
/// Load n < 16 floats, zeros elsewhere.
inline Vec16f load_partial(const float* p, int64_t n) {
  return {_mm256_maskload_ps(p, lane_mask(n)), n > 8 ? _mm256_maskload_ps(p + 8, lane_mask(n - 8)) : _mm256_setzero_ps()};
}
/// Store the first n < 16 lanes.
inline void store_partial(float* p, Vec16f v, int64_t n) {
  _mm256_maskstore_ps(p, lane_mask(n), v.lo);
  if (n > 8) _mm256_maskstore_ps(p + 8, lane_mask(n - 8), v.hi);
}
/// Store bypassing the caches; p must be 64-byte aligned. Follow a run of these with stream_fence().
inline void stream(float* p, Vec16f v) {
  _mm256_stream_ps(p, v.lo);
  _mm256_stream_ps(p + 8, v.hi);
}
inline Vec16f splat(float x) { return {_mm256_set1_ps(x), _mm256_set1_ps(x)}; }

/// exp of 8 lanes, the AVX-512 steps with scalef emulated: 2^n is applied as two factors built
/// from exponent bits, the first product exact, so the result is rounded once as scalef rounds
/// it (denormals included).
inline __m256 exp8(__m256 x) {
  using namespace exp_constants;
  // min/max return their second operand for NaN, so NaN passes both clamps.
  x = _mm256_min_ps(_mm256_set1_ps(kMaxArg), _mm256_max_ps(_mm256_set1_ps(kMinArg), x));
  const __m256 n = _mm256_round_ps(_mm256_mul_ps(x, _mm256_set1_ps(kLog2e)), _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
  __m256 r = _mm256_fnmadd_ps(n, _mm256_set1_ps(kLn2Hi), x);
  r = _mm256_fnmadd_ps(n, _mm256_set1_ps(kLn2Lo), r);
  __m256 p = _mm256_set1_ps(1.0f / 5040);
  p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(1.0f / 720));
  p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(1.0f / 120));
  p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(1.0f / 24));
  p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(1.0f / 6));
  p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(0.5f));
  p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(1.0f));
  p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(1.0f));
  // n ∈ [−150, 150] splits into a = n >> 1 and b = n − a, both in [−75, 75]: normal powers of two.
  // (A NaN x gives a garbage n here, but p is already NaN and stays NaN.)
  const __m256i k = _mm256_cvtps_epi32(n);
  const __m256i a = _mm256_srai_epi32(k, 1), b = _mm256_sub_epi32(k, a);
  const __m256i bias = _mm256_set1_epi32(127);
  const __m256 pow_a = _mm256_castsi256_ps(_mm256_slli_epi32(_mm256_add_epi32(a, bias), 23));
  const __m256 pow_b = _mm256_castsi256_ps(_mm256_slli_epi32(_mm256_add_epi32(b, bias), 23));
  return _mm256_mul_ps(_mm256_mul_ps(p, pow_a), pow_b);
}
/// exp of each lane (the method is above exp_constants): overflow gives inf, underflow 0; NaN propagates.
inline Vec16f exp(Vec16f x) { return {exp8(x.lo), exp8(x.hi)}; }
inline __m256 low_half(Vec16f v) { return v.lo; }
inline __m256 high_half(Vec16f v) { return v.hi; }
inline Vec16f add(Vec16f a, Vec16f b) { return {_mm256_add_ps(a.lo, b.lo), _mm256_add_ps(a.hi, b.hi)}; }
inline Vec16f mul(Vec16f a, Vec16f b) { return {_mm256_mul_ps(a.lo, b.lo), _mm256_mul_ps(a.hi, b.hi)}; }
inline Vec16f sub(Vec16f a, Vec16f b) { return {_mm256_sub_ps(a.lo, b.lo), _mm256_sub_ps(a.hi, b.hi)}; }
inline Vec16f div(Vec16f a, Vec16f b) { return {_mm256_div_ps(a.lo, b.lo), _mm256_div_ps(a.hi, b.hi)}; }
inline Vec16f max(Vec16f a, Vec16f b) { return {_mm256_max_ps(a.lo, b.lo), _mm256_max_ps(a.hi, b.hi)}; }
inline Vec16f min(Vec16f a, Vec16f b) { return {_mm256_min_ps(a.lo, b.lo), _mm256_min_ps(a.hi, b.hi)}; }
inline Vec16f sqrt(Vec16f a) { return {_mm256_sqrt_ps(a.lo), _mm256_sqrt_ps(a.hi)}; }
inline Vec16f nan_or(Vec16f a, Vec16f r) {
  return {_mm256_blendv_ps(r.lo, a.lo, _mm256_cmp_ps(a.lo, a.lo, _CMP_UNORD_Q)), _mm256_blendv_ps(r.hi, a.hi, _mm256_cmp_ps(a.hi, a.hi, _CMP_UNORD_Q))};
}

namespace vec_detail {
inline __m256 bf16_to_f32(__m128i h) { return _mm256_castsi256_ps(_mm256_slli_epi32(_mm256_cvtepu16_epi32(h), 16)); }
// 8 floats to bfloat16, as detail::float_to_bfloat16_bits: to nearest even, a NaN kept quiet.
inline __m128i f32_to_bf16(__m256 v) {
  const __m256i b = _mm256_castps_si256(v);
  const __m256i lsb = _mm256_and_si256(_mm256_srli_epi32(b, 16), _mm256_set1_epi32(1));
  const __m256i rounded = _mm256_srli_epi32(_mm256_add_epi32(b, _mm256_add_epi32(_mm256_set1_epi32(0x7FFF), lsb)), 16);
  const __m256i quiet = _mm256_or_si256(_mm256_srli_epi32(b, 16), _mm256_set1_epi32(0x40));
  const __m256i r = _mm256_blendv_epi8(rounded, quiet, _mm256_castps_si256(_mm256_cmp_ps(v, v, _CMP_UNORD_Q)));
  // Each lane is below 2^16, so the saturating pack is exact; it interleaves the 128-bit halves,
  // and the permute puts lanes 0-3 and 4-7 side by side.
  return _mm256_castsi256_si128(_mm256_permute4x64_epi64(_mm256_packus_epi32(r, r), 0b1000));
}
}  // namespace vec_detail
/// 16 bfloat16 (their bits) widened to float32.
inline Vec16f load_bf16(const uint16_t* p) {
  const auto* q = reinterpret_cast<const __m128i*>(p);
  return {vec_detail::bf16_to_f32(_mm_loadu_si128(q)), vec_detail::bf16_to_f32(_mm_loadu_si128(q + 1))};
}
/// 16 floats rounded to bfloat16.
inline void store_bf16(uint16_t* p, Vec16f v) {
  auto* q = reinterpret_cast<__m128i*>(p);
  _mm_storeu_si128(q, vec_detail::f32_to_bf16(v.lo));
  _mm_storeu_si128(q + 1, vec_detail::f32_to_bf16(v.hi));
}
/// 16 float16 (their bits) widened to float32, and back rounded to nearest even (F16C).
inline Vec16f load_f16(const uint16_t* p) {
  const auto* q = reinterpret_cast<const __m128i*>(p);
  return {_mm256_cvtph_ps(_mm_loadu_si128(q)), _mm256_cvtph_ps(_mm_loadu_si128(q + 1))};
}
inline void store_f16(uint16_t* p, Vec16f v) {
  auto* q = reinterpret_cast<__m128i*>(p);
  _mm_storeu_si128(q, _mm256_cvtps_ph(v.lo, _MM_FROUND_TO_NEAREST_INT));
  _mm_storeu_si128(q + 1, _mm256_cvtps_ph(v.hi, _MM_FROUND_TO_NEAREST_INT));
}

#else

/// 16 floats.
struct Vec16f {
  float v[16];
};
namespace scalar_detail {
template <class Op>
Vec16f lanewise(Vec16f a, Vec16f b, Op op) {
  Vec16f out;
  for (int i = 0; i < 16; ++i) out.v[i] = op(a.v[i], b.v[i]);
  return out;
}
// The x86 targets' a·b + c, fused when the hardware fuses (one instruction); otherwise two
// roundings, within an ulp of the fused result, rather than a slow software fma.
inline float fmadd(float a, float b, float c) {
#if defined(FP_FAST_FMAF)
  return std::fma(a, b, c);
#else
  return a * b + c;
#endif
}
// maxps: a if a > b, else b (so b for a NaN on either side).
inline float max_lane(float a, float b) { return a > b ? a : b; }
// 2^e for a normal exponent e ∈ [−126, 127], from its bits.
inline float pow2(int e) { return std::bit_cast<float>(static_cast<uint32_t>(e + 127) << 23); }
/// exp of one lane, the x86 targets' steps (see exp_constants and avx2::exp8).
inline float exp_lane(float x) {
  using namespace exp_constants;
  if (std::isnan(x)) return x + x;  // quietened, as on the x86 targets; n below would not convert to int
  x = x < kMinArg ? kMinArg : x > kMaxArg ? kMaxArg : x;
  // Round to nearest even by adding and removing 1.5·2^23: exact for |t| < 2^22, and t ≤ 151 here.
  const float t = x * kLog2e;
  const float n = (t + 12582912.0f) - 12582912.0f;
  float r = fmadd(-n, kLn2Hi, x);
  r = fmadd(-n, kLn2Lo, r);
  float p = 1.0f / 5040;
  p = fmadd(p, r, 1.0f / 720);
  p = fmadd(p, r, 1.0f / 120);
  p = fmadd(p, r, 1.0f / 24);
  p = fmadd(p, r, 1.0f / 6);
  p = fmadd(p, r, 0.5f);
  p = fmadd(p, r, 1.0f);
  p = fmadd(p, r, 1.0f);
  const int k = static_cast<int>(n), a = k >> 1;
  return p * pow2(a) * pow2(k - a);
}
// The x86 targets' reduction order: halves, quarters, pairs, the last two lanes.
template <class Op>
float fold(Vec16f v, Op op) {
  float s[8];
  for (int i = 0; i < 8; ++i) s[i] = op(v.v[i], v.v[i + 8]);
  for (int i = 0; i < 4; ++i) s[i] = op(s[i], s[i + 4]);
  for (int i = 0; i < 2; ++i) s[i] = op(s[i], s[i + 2]);
  return op(s[0], s[1]);
}
}  // namespace scalar_detail

inline Vec16f load(const float* p) {
  Vec16f out;
  for (int i = 0; i < 16; ++i) out.v[i] = p[i];
  return out;
}
inline void store(float* p, Vec16f v) {
  for (int i = 0; i < 16; ++i) p[i] = v.v[i];
}
/// Load n < 16 floats, zeros elsewhere.
inline Vec16f load_partial(const float* p, int64_t n) {
  Vec16f out{};
  for (int64_t i = 0; i < n; ++i) out.v[i] = p[i];
  return out;
}
/// Store the first n < 16 lanes.
inline void store_partial(float* p, Vec16f v, int64_t n) {
  for (int64_t i = 0; i < n; ++i) p[i] = v.v[i];
}
/// A plain store here: streaming stores are an x86 instruction, and this target is the portable one.
inline void stream(float* p, Vec16f v) { store(p, v); }
inline void stream_fence() {}
inline Vec16f splat(float x) {
  Vec16f out;
  for (float& lane : out.v) lane = x;
  return out;
}
/// exp of each lane (the method is above exp_constants): overflow gives inf, underflow 0; NaN propagates.
inline Vec16f exp(Vec16f x) {
  for (float& lane : x.v) lane = scalar_detail::exp_lane(lane);
  return x;
}
/// Sum of the 16 lanes.
inline float reduce_add(Vec16f v) { return scalar_detail::fold(v, [](float a, float b) { return a + b; }); }
/// Largest of the 16 lanes.
inline float reduce_max(Vec16f v) { return scalar_detail::fold(v, scalar_detail::max_lane); }
inline Vec16f add(Vec16f a, Vec16f b) { return scalar_detail::lanewise(a, b, [](float x, float y) { return x + y; }); }
inline Vec16f mul(Vec16f a, Vec16f b) { return scalar_detail::lanewise(a, b, [](float x, float y) { return x * y; }); }
inline Vec16f sub(Vec16f a, Vec16f b) { return scalar_detail::lanewise(a, b, [](float x, float y) { return x - y; }); }
inline Vec16f div(Vec16f a, Vec16f b) { return scalar_detail::lanewise(a, b, [](float x, float y) { return x / y; }); }
inline Vec16f max(Vec16f a, Vec16f b) { return scalar_detail::lanewise(a, b, scalar_detail::max_lane); }
inline Vec16f min(Vec16f a, Vec16f b) { return scalar_detail::lanewise(a, b, [](float x, float y) { return x < y ? x : y; }); }
inline Vec16f sqrt(Vec16f a) {
  for (float& lane : a.v) lane = std::sqrt(lane);
  return a;
}
inline Vec16f nan_or(Vec16f a, Vec16f r) { return scalar_detail::lanewise(a, r, [](float x, float y) { return x != x ? x : y; }); }
/// 16 bfloat16 or float16 (their bits) to float32 and back, lane by lane.
inline Vec16f load_bf16(const uint16_t* p) {
  Vec16f out;
  for (int i = 0; i < 16; ++i) out.v[i] = ::tally::detail::bfloat16_bits_to_float(p[i]);
  return out;
}
inline void store_bf16(uint16_t* p, Vec16f v) {
  for (int i = 0; i < 16; ++i) p[i] = ::tally::detail::float_to_bfloat16_bits(v.v[i]);
}
inline Vec16f load_f16(const uint16_t* p) {
  Vec16f out;
  for (int i = 0; i < 16; ++i) out.v[i] = ::tally::detail::half_bits_to_float(p[i]);
  return out;
}
inline void store_f16(uint16_t* p, Vec16f v) {
  for (int i = 0; i < 16; ++i) p[i] = ::tally::detail::float_to_half_bits(v.v[i]);
}

#endif

// Every target: max(a, b) and min(a, b) return b when a lane is unordered, as x86's maxps/minps.
// nan_or(a, r) is r but a's lanes where a is NaN. With max and min returning b for an unordered
// lane, that makes max_nan(a, b) and min_nan(a, b) NaN when either lane is (a reduction's
// extreme, where a NaN must win and stay, as PyTorch's max and amax have it).
inline Vec16f max_nan(Vec16f a, Vec16f b) { return nan_or(a, max(a, b)); }
inline Vec16f min_nan(Vec16f a, Vec16f b) { return nan_or(a, min(a, b)); }

/// erf of each lane: x·P(x²)/Q(x²) on x clamped to [−4, 4], where erf is ±1 in float32. The
/// coefficients are a weighted least-squares rational fit made for tally (scripts/fit_erf.py);
/// measured within 5e-7 relative (about 4 ulp) of erf over float32. NaN propagates (the clamps
/// return their second operand for it).
inline Vec16f erf(Vec16f x) {
  const Vec16f c = min(splat(4.0f), max(splat(-4.0f), x));
  const Vec16f t = mul(c, c);
  Vec16f p = splat(1.9672646e-08f);
  for (float k : {-1.9411032e-06f, 0.00014104498f, 0.00369135f, 0.05054907f, 0.19984913f, 1.1283791f}) p = add(mul(p, t), splat(k));
  Vec16f q = splat(0.00095180405f);
  for (float k : {0.014337197f, 0.11495389f, 0.51044357f, 1.0f}) q = add(mul(q, t), splat(k));
  // The fit overshoots to 1.0000002 at ±4: clamped, erf(±4) and beyond is ±1 exactly, so that
  // 1 + erf(−∞) is 0 (GELU(−∞) is NaN, as in PyTorch).
  return min(splat(1.0f), max(splat(-1.0f), div(mul(c, p), q)));
}

/// tanh of each lane: x·P(x²)/Q(x²) on x clamped to [−9, 9], P(0) = Q(0) = 1, a weighted
/// least-squares rational fit made for tally (scripts/fit_tanh.py): within 3.1e-7 relative (about
/// 5 ulp, near ±1) of tanh over float32. Beyond ±9, where tanh rounds to ±1, the result is ±1
/// exactly (1 + tanh(−∞) must be 0, as GELU's tanh form needs): the part of x past the clamp, up
/// to ±0.5, is added a thousandfold before the final clamp to [−1, 1]. −0 stays −0; NaN
/// propagates through the clamps.
inline Vec16f tanh(Vec16f x) {
  const Vec16f wide = min(splat(9.5f), max(splat(-9.5f), x));
  const Vec16f c = min(splat(9.0f), max(splat(-9.0f), wide));
  const Vec16f t = mul(c, c);
  Vec16f p = splat(-8.907603794112637e-14f);
  for (float k : {5.441188818955389e-11f, -2.0564899116948254e-08f, 1.1238294064241927e-05f, 0.003112011356279254f,
                  0.13091233372688293f, 1.0f})
    p = add(mul(p, t), splat(k));
  Vec16f q = splat(0.0002557857660576701f);
  for (float k : {0.0245272908359766f, 0.46424564719200134f, 1.0f}) q = add(mul(q, t), splat(k));
  // Subtracted as c − wide (0 within ±9), so that −0 − 0 keeps −0's sign.
  const Vec16f short_of = mul(sub(c, wide), splat(1000.0f));
  return min(splat(1.0f), max(splat(-1.0f), sub(div(mul(c, p), q), short_of)));
}

#if defined(TALLY_VEC_MATH_X86)
// Both x86 targets: each defines low_half and high_half for its own Vec16f.

/// Sum of the 16 lanes.
inline float reduce_add(Vec16f v) {
  return vec_detail::fold_halves(low_half(v), high_half(v), [](__m256 a, __m256 b) { return _mm256_add_ps(a, b); },
                             [](__m128 a, __m128 b) { return _mm_add_ps(a, b); });
}
/// Largest of the 16 lanes.
inline float reduce_max(Vec16f v) {
  return vec_detail::fold_halves(low_half(v), high_half(v), [](__m256 a, __m256 b) { return _mm256_max_ps(a, b); },
                             [](__m128 a, __m128 b) { return _mm_max_ps(a, b); });
}
/// Orders earlier stream() stores before any later store, as seen by other threads.
inline void stream_fence() { _mm_sfence(); }
#endif

}  // namespace TALLY_CPU_TARGET
}  // namespace tally::kernels
