#pragma once
// Inner loops of elementwise ops over a StridedLoop. Storage types are converted to their
// compute type (float32 for the 16/8-bit floats), the functor runs there, and the result is
// rounded once on store. Contiguous runs and broadcast scalars get tight loops the compiler
// vectorises; a functor with a `vec` member gets an explicit Vec16f path for float (AVX-512, AVX2 or scalar,
// whichever the build targets; see vec_math.h).

#include <cstdint>
#include <cstring>
#include <type_traits>

#include "tally/dtype/dtype.h"
#include "tally/kernels/cpu/strided_loop.h"
#include "tally/kernels/cpu/vec_math.h"

namespace tally::kernels {
inline namespace TALLY_CPU_TARGET {  // Note [CPU kernel dispatch]: one copy per target

template <class F>
concept HasVecFloat = requires(F f, Vec16f v) {
  { f.vec(v) } -> std::same_as<Vec16f>;
};
template <class F>
concept HasVecFloat2 = requires(F f, Vec16f v) {
  { f.vec(v, v) } -> std::same_as<Vec16f>;
};

/// 16 lanes of a 16-bit float type (BFloat16 or Half), by their bits, to and from float32.
template <class T>
Vec16f load_16bit(const uint16_t* p) {
  if constexpr (std::is_same_v<T, BFloat16>) return load_bf16(p);
  else return load_f16(p);
}
template <class T>
void store_16bit(uint16_t* p, Vec16f v) {
  if constexpr (std::is_same_v<T, BFloat16>) store_bf16(p, v);
  else store_f16(p, v);
}

/// out[i] = f(in[i]) for a loop whose operand 0 is the output (type TOut), operand 1 the input (TIn).
template <class TOut, class TIn, class F>
void unary_kernel(const StridedLoop<2>& loop, F f) {
  using C = compute_t<TIn>;
  loop.for_each([&](const std::array<char*, 2>& p, const std::array<int64_t, 2>& s, int64_t n) {
    auto* out = reinterpret_cast<TOut*>(p[0]);
    const auto* in = reinterpret_cast<const TIn*>(p[1]);
    if (s[0] == sizeof(TOut) && s[1] == sizeof(TIn)) {
      int64_t i = 0;
      if constexpr (std::is_same_v<TIn, float> && std::is_same_v<TOut, float> && HasVecFloat<F>) {
        for (; i + 16 <= n; i += 16) store(out + i, f.vec(load(in + i)));
        if (i < n) store_partial(out + i, f.vec(load_partial(in + i, n - i)), n - i);
        return;
      } else if constexpr ((std::is_same_v<TIn, BFloat16> || std::is_same_v<TIn, Half>) && std::is_same_v<TIn, TOut> && HasVecFloat<F>) {
        // 16-bit floats take the same Vec16f path: widened, computed in float32, rounded once, as
        // the scalar loop would; the tail goes through a float block.
        const auto* src = reinterpret_cast<const uint16_t*>(in);
        auto* dst = reinterpret_cast<uint16_t*>(out);
        for (; i + 16 <= n; i += 16) store_16bit<TOut>(dst + i, f.vec(load_16bit<TIn>(src + i)));
        if (i < n) {
          float block[16];
          for (int64_t j = i; j < n; ++j) block[j - i] = static_cast<float>(in[j]);
          store_partial(block, f.vec(load_partial(block, n - i)), n - i);
          for (int64_t j = i; j < n; ++j) out[j] = TOut(block[j - i]);
        }
        return;
      }
      for (; i < n; ++i) out[i] = cast_to<TOut>(f(static_cast<C>(in[i])));
    } else {
      for (int64_t i = 0; i < n; ++i) {
        const TIn& x = *reinterpret_cast<const TIn*>(p[1] + i * s[1]);
        *reinterpret_cast<TOut*>(p[0] + i * s[0]) = cast_to<TOut>(f(static_cast<C>(x)));
      }
    }
  });
}

/// out[i] = f(a[i], b[i]); operands 0, 1, 2 are out (TOut), a and b (both TIn).
template <class TOut, class TIn, class F>
void binary_kernel(const StridedLoop<3>& loop, F f) {
  using C = compute_t<TIn>;
  loop.for_each([&](const std::array<char*, 3>& p, const std::array<int64_t, 3>& s, int64_t n) {
    auto* out = reinterpret_cast<TOut*>(p[0]);
    const auto* a = reinterpret_cast<const TIn*>(p[1]);
    const auto* b = reinterpret_cast<const TIn*>(p[2]);
    constexpr int64_t so = sizeof(TOut), si = sizeof(TIn);
    if (s[0] == so && s[1] == si && s[2] == si) {
      int64_t i = 0;
      if constexpr (std::is_same_v<TIn, TOut> && HasVecFloat2<F> &&
                    (std::is_same_v<TIn, float> || std::is_same_v<TIn, BFloat16> || std::is_same_v<TIn, Half>)) {
        // A functor with a two-operand vec: 16 lanes at a time (16-bit floats widened and rounded
        // once, as in unary_kernel); the tail through a float block, so every element gets vec.
        for (; i + 16 <= n; i += 16) {
          if constexpr (std::is_same_v<TIn, float>) {
            store(out + i, f.vec(load(a + i), load(b + i)));
          } else {
            const auto* a16 = reinterpret_cast<const uint16_t*>(a);
            const auto* b16 = reinterpret_cast<const uint16_t*>(b);
            store_16bit<TOut>(reinterpret_cast<uint16_t*>(out) + i, f.vec(load_16bit<TIn>(a16 + i), load_16bit<TIn>(b16 + i)));
          }
        }
        if (i < n) {
          float x[16], y[16];
          for (int64_t j = i; j < n; ++j) x[j - i] = static_cast<float>(a[j]), y[j - i] = static_cast<float>(b[j]);
          store_partial(x, f.vec(load_partial(x, n - i), load_partial(y, n - i)), n - i);
          for (int64_t j = i; j < n; ++j) out[j] = TOut(x[j - i]);
        }
        return;
      }
      for (; i < n; ++i) out[i] = cast_to<TOut>(f(static_cast<C>(a[i]), static_cast<C>(b[i])));
    } else if (s[0] == so && s[1] == si && s[2] == 0) {
      const C bv = static_cast<C>(b[0]);
      for (int64_t i = 0; i < n; ++i) out[i] = cast_to<TOut>(f(static_cast<C>(a[i]), bv));
    } else if (s[0] == so && s[1] == 0 && s[2] == si) {
      const C av = static_cast<C>(a[0]);
      for (int64_t i = 0; i < n; ++i) out[i] = cast_to<TOut>(f(av, static_cast<C>(b[i])));
    } else {
      for (int64_t i = 0; i < n; ++i) {
        const C x = static_cast<C>(*reinterpret_cast<const TIn*>(p[1] + i * s[1]));
        const C y = static_cast<C>(*reinterpret_cast<const TIn*>(p[2] + i * s[2]));
        *reinterpret_cast<TOut*>(p[0] + i * s[0]) = cast_to<TOut>(f(x, y));
      }
    }
  });
}

/// out[i] = f(a[i], b[i], c[i]) with per-operand storage types (where, masked_fill).
template <class TOut, class TA, class TB, class TC, class F>
void ternary_kernel(const StridedLoop<4>& loop, F f) {
  loop.for_each([&](const std::array<char*, 4>& p, const std::array<int64_t, 4>& s, int64_t n) {
    // A dense output with every input dense or one value repeated (a scalar such as
    // masked_fill's, a broadcast dim) gets a loop whose steps are compile-time 0 or 1: the
    // compiler vectorises it, where the byte strides below keep it to one element at a time.
    const bool steps_known = s[0] == sizeof(TOut) && (s[1] == 0 || s[1] == sizeof(TA)) && (s[2] == 0 || s[2] == sizeof(TB)) &&
                             (s[3] == 0 || s[3] == sizeof(TC));
    if (steps_known) {
      auto* out = reinterpret_cast<TOut*>(p[0]);
      const auto* a = reinterpret_cast<const TA*>(p[1]);
      const auto* b = reinterpret_cast<const TB*>(p[2]);
      const auto* c = reinterpret_cast<const TC*>(p[3]);
      auto run = [&]<int64_t SA, int64_t SB, int64_t SC>() {
        for (int64_t i = 0; i < n; ++i) out[i] = f(a[i * SA], b[i * SB], c[i * SC]);
      };
      switch ((s[1] != 0) | (s[2] != 0) << 1 | (s[3] != 0) << 2) {
        case 0: return run.template operator()<0, 0, 0>();
        case 1: return run.template operator()<1, 0, 0>();
        case 2: return run.template operator()<0, 1, 0>();
        case 3: return run.template operator()<1, 1, 0>();
        case 4: return run.template operator()<0, 0, 1>();
        case 5: return run.template operator()<1, 0, 1>();
        case 6: return run.template operator()<0, 1, 1>();
        default: return run.template operator()<1, 1, 1>();
      }
    }
    for (int64_t i = 0; i < n; ++i) {
      const TA& a = *reinterpret_cast<const TA*>(p[1] + i * s[1]);
      const TB& b = *reinterpret_cast<const TB*>(p[2] + i * s[2]);
      const TC& c = *reinterpret_cast<const TC*>(p[3] + i * s[3]);
      *reinterpret_cast<TOut*>(p[0] + i * s[0]) = f(a, b, c);
    }
  });
}

}  // namespace TALLY_CPU_TARGET
}  // namespace tally::kernels
