#pragma once
// 8-bit floats as PyTorch defines them (torch.float8_e4m3fn, torch.float8_e5m2).
//  e4m3fn: bias 7, 3 mantissa bits, no infinity; only S.1111.111 is NaN; max 448.
//  e5m2:   bias 15, 2 mantissa bits, IEEE-like with infinities; max 57344.
// Conversion from float rounds to nearest even. A value that rounds past the largest finite
// number becomes NaN (e4m3fn) or infinity (e5m2), as in PyTorch; the saturating conversion used
// for fp8 training clamps it to ±max instead.

#include <bit>
#include <cmath>
#include <cstdint>

namespace tally {

namespace detail {
/// Layout of an 8-bit float: exponent bits, mantissa bits, bias, and whether it has infinities.
template <int ExpBits, int MantBits, int Bias, bool HasInf>
struct Float8Format {
  static constexpr int kMant = MantBits;
  static constexpr int kBias = Bias;
  // Largest finite code (magnitude): e4m3fn gives up its top mantissa code to NaN, e5m2 its top exponent.
  static constexpr uint8_t kMaxCode = HasInf ? static_cast<uint8_t>(((1 << ExpBits) - 2) << MantBits | ((1 << MantBits) - 1))
                                             : static_cast<uint8_t>(0x7E);
  static constexpr uint8_t kOverflowCode = HasInf ? static_cast<uint8_t>((1 << ExpBits) - 1) << MantBits : 0x7F;
  static constexpr uint8_t kNanCode = 0x7F;

  // Always inlined, as half.h's conversions are (Note [CPU kernel dispatch] in kernels/cpu/dispatch.h).
  [[gnu::always_inline]] static uint8_t encode(float f, bool saturate) {
    uint32_t x = std::bit_cast<uint32_t>(f);
    uint8_t sign = static_cast<uint8_t>((x >> 24) & 0x80u);
    uint32_t abs = x & 0x7FFFFFFFu;
    if (abs > 0x7F800000u) return sign | kNanCode;
    if (abs == 0x7F800000u) return sign | (saturate ? kMaxCode : kOverflowCode);
    int exp = static_cast<int>(abs >> 23) - 127;
    uint32_t code;
    if (exp < 1 - Bias) {
      // Subnormal in the target: count units of 2^(1-Bias-Mant); power-of-two scaling is exact
      // and nearbyint rounds to even. A count of 2^Mant is the smallest normal, encoded the same way.
      float units = std::bit_cast<float>(abs) * std::ldexp(1.0f, Bias - 1 + MantBits);
      code = static_cast<uint32_t>(std::nearbyint(units));
    } else {
      // Round exponent and mantissa together so a carry moves into the exponent, then re-bias.
      constexpr int shift = 23 - MantBits;
      uint32_t rounded = (abs + ((1u << (shift - 1)) - 1u) + ((abs >> shift) & 1u)) >> shift;
      code = rounded - (static_cast<uint32_t>(127 - Bias) << MantBits);
    }
    if (code > kMaxCode) return sign | (saturate ? kMaxCode : kOverflowCode);
    return static_cast<uint8_t>(sign | code);
  }

  [[gnu::always_inline]] static float decode(uint8_t b) {
    uint32_t sign = static_cast<uint32_t>(b & 0x80u) << 24;
    uint32_t mag = b & 0x7Fu;
    uint32_t exp = mag >> MantBits, mant = mag & ((1u << MantBits) - 1u);
    if (!HasInf && mag == 0x7Fu) return std::bit_cast<float>(sign | 0x7FC00000u);
    if (HasInf && exp == (1u << ExpBits) - 1u)
      return std::bit_cast<float>(sign | 0x7F800000u | (mant ? 0x400000u : 0u));
    if (exp == 0) {
      float v = static_cast<float>(mant) * std::ldexp(1.0f, 1 - Bias - MantBits);
      return std::bit_cast<float>(std::bit_cast<uint32_t>(v) | sign);
    }
    return std::bit_cast<float>(sign | ((exp - Bias + 127u) << 23) | (mant << (23 - MantBits)));
  }
};
using E4M3fn = Float8Format<4, 3, 7, false>;
using E5M2 = Float8Format<5, 2, 15, true>;
}  // namespace detail

/// torch.float8_e4m3fn: 4 exponent bits, 3 mantissa bits, finite only, max 448.
struct Float8_e4m3fn {
  uint8_t bits = 0;
  Float8_e4m3fn() = default;
  [[gnu::always_inline]] Float8_e4m3fn(float f) : bits(detail::E4M3fn::encode(f, false)) {}  // NOLINT
  static Float8_e4m3fn from_bits(uint8_t b) { Float8_e4m3fn v; v.bits = b; return v; }
  /// Saturating conversion for fp8 training: out-of-range values clamp to ±448, NaN stays NaN.
  static Float8_e4m3fn saturate(float f) { return from_bits(detail::E4M3fn::encode(f, true)); }
  [[gnu::always_inline]] operator float() const { return detail::E4M3fn::decode(bits); }  // NOLINT
};

/// torch.float8_e5m2: 5 exponent bits, 2 mantissa bits, IEEE-like, max 57344.
struct Float8_e5m2 {
  uint8_t bits = 0;
  Float8_e5m2() = default;
  [[gnu::always_inline]] Float8_e5m2(float f) : bits(detail::E5M2::encode(f, false)) {}  // NOLINT
  static Float8_e5m2 from_bits(uint8_t b) { Float8_e5m2 v; v.bits = b; return v; }
  /// Saturating conversion for fp8 training: out-of-range values and infinities clamp to ±57344.
  static Float8_e5m2 saturate(float f) { return from_bits(detail::E5M2::encode(f, true)); }
  [[gnu::always_inline]] operator float() const { return detail::E5M2::decode(bits); }  // NOLINT
};

}  // namespace tally
