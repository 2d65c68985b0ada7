#pragma once
// Box–Muller in float arithmetic, written branch-free so that a loop over pairs vectorises (with
// libm's logf and sincosf it could not: 16M normals took 84 ms, most of it in those two calls).
// Every step is an IEEE operation on floats and integers with no contraction (ISO C++ mode), so a
// value is the same whether the compiler ran it in a vector lane or in a scalar remainder: the
// draw does not depend on how the counters were split between threads.
//
// Checked exhaustively against double precision (tests/kernels/test_box_muller.cpp): log_unit
// within 0.82 ulp (glibc's logf: 0.79), sin and cos within 9.3e-8 absolute.

#include <bit>
#include <cmath>
#include <cstdint>

#include "tally/kernels/cpu/target.h"

namespace tally::kernels {
inline namespace TALLY_CPU_TARGET {  // Note [CPU kernel dispatch]: one copy per target

/// ln(u) for u in [2^-24, 1] (Cephes' logf): u = x·2^e with x in [sqrt(1/2), sqrt 2), then a
/// degree-9 polynomial in x − 1, and e·ln 2 added in two parts.
inline float log_unit(float u) {
  const uint32_t bits = std::bit_cast<uint32_t>(u);
  float e = static_cast<float>(static_cast<int32_t>(bits >> 23) - 126);
  float x = std::bit_cast<float>((bits & 0x007fffffu) | 0x3f000000u);  // mantissa in [0.5, 1)
  const bool low = x < 0.707106781186547524f;
  e = low ? e - 1.0f : e;
  x = low ? x + x - 1.0f : x - 1.0f;
  const float z = x * x;
  float y = 7.0376836292e-2f;
  y = y * x - 1.1514610310e-1f;
  y = y * x + 1.1676998740e-1f;
  y = y * x - 1.2420140846e-1f;
  y = y * x + 1.4249322787e-1f;
  y = y * x - 1.6668057665e-1f;
  y = y * x + 2.0000714765e-1f;
  y = y * x - 2.4999993993e-1f;
  y = y * x + 3.3333331174e-1f;
  y = y * x * z;
  y = y + -2.12194440e-4f * e;
  y = y + -0.5f * z;
  x = x + y;
  return x + 0.693359375f * e;
}

/// sin(2πt) and cos(2πt) for t in [0, 1) with 24-bit resolution (t = k·2^-24). The reduction is
/// exact in turns: q = round(4t) and f = t − q/4 in [−1/8, 1/8] need no rounding, so only
/// a = 2π·f (|a| ≤ π/4) is rounded before Cephes' sinf and cosf polynomials; the quadrant then
/// swaps and negates the two.
inline void sincos_turns(float t, float& sin_out, float& cos_out) {
  const int32_t q = static_cast<int32_t>(4.0f * t + 0.5f);  // 0..4; 4 is quadrant 0 again
  const float a = (t - static_cast<float>(q) * 0.25f) * 6.28318530717958647692f;
  const float z = a * a;
  float s = -1.9515295891e-4f;
  s = s * z + 8.3321608736e-3f;
  s = s * z - 1.6666654611e-1f;
  s = s * z * a + a;
  float c = 2.443315711809948e-5f;
  c = c * z - 1.388731625493765e-3f;
  c = c * z + 4.166664568298827e-2f;
  c = c * z * z - 0.5f * z + 1.0f;
  const bool swap = (q & 1) != 0;
  const float sin_abs = swap ? c : s, cos_abs = swap ? s : c;
  sin_out = (q & 2) != 0 ? -sin_abs : sin_abs;
  cos_out = ((q + 1) & 2) != 0 ? -cos_abs : cos_abs;
}

/// The two standard normals of one Box–Muller pair from its two 64-bit random words: the top 24
/// bits of each, u1 = 1 − k1·2^-24 in (0, 1] (so the log is finite; |z| < 5.8) and t = k2·2^-24.
inline void normal_pair(uint64_t bits1, uint64_t bits2, float& cos_part, float& sin_part) {
  const float u1 = 1.0f - static_cast<float>(static_cast<uint32_t>(bits1 >> 40)) * 0x1.0p-24f;
  const float t = static_cast<float>(static_cast<uint32_t>(bits2 >> 40)) * 0x1.0p-24f;
  const float r = std::sqrt(-2.0f * log_unit(u1));
  float s, c;
  sincos_turns(t, s, c);
  cos_part = r * c;
  sin_part = r * s;
}

}  // namespace TALLY_CPU_TARGET
}  // namespace tally::kernels
