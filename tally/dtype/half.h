#pragma once
// 16-bit floating-point storage types. Arithmetic on them happens in float32 (see dispatch.h);
// these types only convert, with round-to-nearest-even like PyTorch.

#include <bit>
#include <cstdint>
#include <cstring>

#if defined(__F16C__)
// As in kernels/cpu/vec_math.h: GCC 12.2's intrinsics headers warn about their own "undefined"
// vectors wherever they are inlined (GCC bug 105593); silenced for the header only.
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wuninitialized"
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#include <immintrin.h>
#pragma GCC diagnostic pop
#endif

namespace tally {

namespace detail {
// The conversions are always inlined: every CPU kernel converts through them, and an out-of-line
// copy emitted by an AVX-512 kernel pass would share its name with the baseline one, so the
// linker could keep the AVX-512 copy for everyone (Note [CPU kernel dispatch] in
// kernels/cpu/dispatch.h; the test kernel_pass_symbols catches it).
// Where the compiler targets F16C (the AVX2 and AVX-512 kernel passes, x86-64-v3 and up), the
// conversions are the hardware's one-instruction ones, which also vectorise; elsewhere the
// bit-level forms below, which round the same way (a NaN's payload may differ: hardware keeps it).
[[gnu::always_inline]] inline uint16_t float_to_half_bits(float f) {
#if defined(__F16C__)
  return static_cast<uint16_t>(_cvtss_sh(f, _MM_FROUND_TO_NEAREST_INT));
#else
  // IEEE binary16: 1 sign, 5 exponent (bias 15), 10 mantissa bits.
  uint32_t x = std::bit_cast<uint32_t>(f);
  uint32_t sign = (x >> 16) & 0x8000u;
  uint32_t abs = x & 0x7FFFFFFFu;
  if (abs >= 0x7F800000u) return static_cast<uint16_t>(sign | (abs > 0x7F800000u ? 0x7E00u : 0x7C00u));
  if (abs >= 0x477FF000u) return static_cast<uint16_t>(sign | 0x7C00u);  // rounds past 65504: inf
  if (abs < 0x38800000u) {
    // Subnormal half (or zero): scale into an integer number of 2^-24 units, rounding to even.
    // Adding 0.5f forces the hardware to round the mantissa at the right bit.
    float a = std::bit_cast<float>(abs) + 0.5f;
    return static_cast<uint16_t>(sign | (std::bit_cast<uint32_t>(a) - 0x3F000000u));
  }
  uint32_t mant_odd = (abs >> 13) & 1u;
  abs += 0xC8000FFFu + mant_odd;  // re-bias exponent (-112 << 23) and round to nearest even
  return static_cast<uint16_t>(sign | (abs >> 13));
#endif
}

[[gnu::always_inline]] inline float half_bits_to_float(uint16_t h) {
#if defined(__F16C__)
  return _cvtsh_ss(h);
#else
  uint32_t sign = static_cast<uint32_t>(h & 0x8000u) << 16;
  uint32_t exp = (h >> 10) & 0x1Fu;
  uint32_t mant = h & 0x3FFu;
  if (exp == 0x1F)  // inf, or a NaN made quiet as the hardware does
    return std::bit_cast<float>(sign | 0x7F800000u | (mant << 13) | (mant ? 0x400000u : 0u));
  if (exp == 0) {
    float v = static_cast<float>(mant) * 5.9604644775390625e-08f;  // mant * 2^-24
    return std::bit_cast<float>(std::bit_cast<uint32_t>(v) | sign);
  }
  return std::bit_cast<float>(sign | ((exp + 112u) << 23) | (mant << 13));
#endif
}

[[gnu::always_inline]] inline uint16_t float_to_bfloat16_bits(float f) {
  uint32_t x = std::bit_cast<uint32_t>(f);
  if ((x & 0x7FFFFFFFu) > 0x7F800000u) return static_cast<uint16_t>((x >> 16) | 0x0040u);  // quiet NaN
  x += 0x7FFFu + ((x >> 16) & 1u);  // round to nearest even
  return static_cast<uint16_t>(x >> 16);
}

[[gnu::always_inline]] inline float bfloat16_bits_to_float(uint16_t b) {
  return std::bit_cast<float>(static_cast<uint32_t>(b) << 16);
}
}  // namespace detail

/// IEEE binary16 (torch.float16).
struct Half {
  uint16_t bits = 0;
  Half() = default;
  // Conversions always inline, for the reason above float_to_half_bits.
  [[gnu::always_inline]] Half(float f) : bits(detail::float_to_half_bits(f)) {}  // NOLINT: implicit like c10::Half
  static Half from_bits(uint16_t b) { Half h; h.bits = b; return h; }
  [[gnu::always_inline]] operator float() const { return detail::half_bits_to_float(bits); }  // NOLINT
};

/// Brain floating point: float32's exponent with 7 mantissa bits (torch.bfloat16).
struct BFloat16 {
  uint16_t bits = 0;
  BFloat16() = default;
  [[gnu::always_inline]] BFloat16(float f) : bits(detail::float_to_bfloat16_bits(f)) {}  // NOLINT
  static BFloat16 from_bits(uint16_t b) { BFloat16 h; h.bits = b; return h; }
  [[gnu::always_inline]] operator float() const { return detail::bfloat16_bits_to_float(bits); }  // NOLINT
};

}  // namespace tally
