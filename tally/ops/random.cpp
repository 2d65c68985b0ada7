// Random fills. Every draw maps counter i to a value with a pure function, so the fill is
// parallel and reproducible. Cost: bytes written (random generation is not counted as FLOPs).

#include "tally/ops/random.h"

#include <algorithm>
#include <cmath>
#include <limits>

#include "tally/dtype/finfo.h"
#include "tally/kernels/cpu/box_muller.h"
#include "tally/kernels/cpu/dispatch.h"
#include "tally/kernels/cpu/parallel.h"
#include "tally/ops/apply.h"
#include "tally/ops/creation.h"

namespace tally {

namespace {

/// Note [Uniform bits per dtype]: a uniform on [0, 1) for a dtype with `digits` significand bits
/// (float64 53, float32 24, float16 11, bfloat16 8, as std::numeric_limits counts them) is k · 2^-digits
/// with k the top `digits` of the counter's 64 bits, as PyTorch draws it (uniform_real in
/// its TransformationHelper.h, which takes as many random bits as the dtype's mantissa holds).
/// Every such value is exact in the dtype, so none rounds up to 1, as 53 bits rounded to the
/// dtype did (2^-9 of bfloat16 draws came out as 1.0); float64's stream is Generator::uniform01's, and
/// a float32 value is its float64 value truncated to 24 bits.
struct UniformBits {
  int shift;     // 64 - digits
  double scale;  // 2^-digits
  explicit UniformBits(Dtype d) {
    const int digits = 1 - std::ilogb(finfo(d).eps);
    shift = 64 - digits;
    scale = std::ldexp(1.0, -digits);
  }
  double operator()(uint64_t bits) const { return static_cast<double>(bits >> shift) * scale; }
};

/// Standard normals for counters [c, c + n) into out. Box–Muller turns the uniforms of an
/// even/odd counter pair (2k, 2k + 1) into two independent normals, r·cos θ for the even counter and
/// r·sin θ for the odd one, so one log, sqrt and sincos serve two elements. Draws start on an even
/// counter (normal_counters), so no pair is split between two draws.
void normals(const Generator& g, uint64_t c, int64_t n, double* out) {
  for (int64_t i = 0; i < n;) {
    const uint64_t even = (c + static_cast<uint64_t>(i)) & ~uint64_t{1};
    // u1 in (0, 1] so the log is finite.
    const double r = std::sqrt(-2.0 * std::log(1.0 - g.uniform01(even)));
    double sin_t, cos_t;
    ::sincos(2.0 * M_PI * g.uniform01(even + 1), &sin_t, &cos_t);
    if (c + static_cast<uint64_t>(i) == even) {
      out[i++] = r * cos_t;
      if (i < n) out[i++] = r * sin_t;
    } else {
      out[i++] = r * sin_t;
    }
  }
}

/// The same pairs in float arithmetic, for tensors whose values are float or narrower: what they
/// keep of a double computation is its float rounding anyway. The pairs go through the
/// branch-free kernels/cpu/box_muller.h in a loop the compiler vectorises (16M normals: 150 ms
/// with libm's double log and sincos, 84 ms with logf and sincosf, 10.5 ms vectorised). The uniforms
/// are the top 24 of the same 53 bits normals() uses, so a float32 and a float64 draw with one
/// seed agree to float precision; |z| < sqrt(-2 ln 2^-24) = 5.8, as in PyTorch's float path.
void normals_float(const Generator& g, uint64_t c, int64_t n, double* out) {
  int64_t i = 0;
  float cos_part, sin_part;
  if (n > 0 && (c & 1)) {  // the chunk starts on the odd half of a pair: its sin part
    kernels::normal_pair(g.bits(c - 1), g.bits(c), cos_part, sin_part);
    out[i++] = sin_part;
  }
  const int64_t pairs = (n - i) / 2;
  const uint64_t first = c + static_cast<uint64_t>(i);  // even
  double* const dst = out + i;
#pragma omp simd
  for (int64_t p = 0; p < pairs; ++p) {
    float cp, sp;
    const uint64_t even = first + 2 * static_cast<uint64_t>(p);
    kernels::normal_pair(g.bits(even), g.bits(even + 1), cp, sp);
    dst[2 * p] = cp;
    dst[2 * p + 1] = sp;
  }
  i += 2 * pairs;
  if (i < n) {  // the chunk ends on the even half of a pair: its cos part
    const uint64_t even = c + static_cast<uint64_t>(i);
    kernels::normal_pair(g.bits(even), g.bits(even + 1), cos_part, sin_part);
    out[i] = cos_part;
  }
}

#if TALLY_PRIMARY_PASS
/// Inverse of erf on (-1, 1): a rational first guess refined by Newton steps on std::erf.
double erfinv(double y) {
  // Giles' single-precision polynomials ("Approximating the erfinv function", 2010) as the start,
  // good to ~1e-7 over (−1, 1), then Newton steps on |x| to double precision. Past |y| = 0.5
  // the residual is taken as (1 − |y|) − erfc(|x|): erf(x) − y would cancel to nothing in the
  // tails (the start once was a rough guess there, 0.065 off at 6σ, and truncated normals drawn
  // in a tail piled up on its bound).
  const double ay = std::abs(y);
  if (ay >= 1) return std::copysign(INFINITY, y);
  double w = -std::log((1.0 - ay) * (1.0 + ay)), p;
  if (w < 5) {
    w -= 2.5;
    p = 2.81022636e-08;
    for (double c : {3.43273939e-07, -3.5233877e-06, -4.39150654e-06, 0.00021858087, -0.00125372503, -0.00417768164, 0.246640727, 1.50140941})
      p = c + p * w;
  } else {
    w = std::sqrt(w) - 3;
    p = -0.000200214257;
    for (double c : {0.000100950558, 0.00134934322, -0.00367342844, 0.00573950773, -0.0076224613, 0.00943887047, 1.00167406, 2.83297682})
      p = c + p * w;
  }
  double x = p * ay;
  for (int i = 0; i < 3; ++i) {
    const double residual = ay > 0.5 ? (1.0 - ay) - std::erfc(x) : std::erf(x) - ay;
    x -= residual / (2.0 / std::sqrt(M_PI) * std::exp(-x * x));
  }
  return std::copysign(x, y);
}

/// Write the values of counters first .. first + numel into t, in chunks: block(g, c, n, out)
/// writes n values of type V (double, or int64_t for integers that must stay exact) for counters
/// c .. c + n. Parallel; the result does not depend on the threads.
template <class V, class Block>
void fill_blocks(Tensor& t, const Generator& g, uint64_t first, Block block) {
  Tensor dst = t.is_contiguous() ? t : empty(t.sizes(), t.dtype());
  dispatch(t.dtype(), "random", [&]<class T>() {
    T* p = static_cast<T*>(dst.data_ptr());
    kernels::parallel_for(dst.numel(), 4096, [&](int64_t b, int64_t e) {
      constexpr int64_t kChunk = 256;
      V values[kChunk];
      for (int64_t i = b; i < e; i += kChunk) {
        const int64_t n = std::min(kChunk, e - i);
        block(g, first + static_cast<uint64_t>(i), n, values);
        for (int64_t k = 0; k < n; ++k) {
          if constexpr (std::is_integral_v<T>) p[i + k] = static_cast<T>(values[k]);
          else p[i + k] = cast_to<T>(values[k]);
        }
      }
    });
  });
  if (!dst.is_same(t)) t.copy_(dst);
}

/// Write value_at(counter) into every element of t, each element using one fresh counter.
template <class F>
void fill_with(Tensor& t, Generator* gen, F value_at) {
  Generator& g = gen ? *gen : default_generator();
  const uint64_t first = g.reserve(static_cast<uint64_t>(t.numel()));
  using V = decltype(value_at(g, first));
  fill_blocks<V>(t, g, first, [&](const Generator& gg, uint64_t c, int64_t n, V* out) {
    for (int64_t k = 0; k < n; ++k) out[k] = value_at(gg, c + static_cast<uint64_t>(k));
  });
}

/// mean + std · N(0, 1) into every element of t, starting on an even counter (see normals()).
void fill_normal(Tensor& t, Generator* gen, double mean, double std) {
  Generator& g = gen ? *gen : default_generator();
  const uint64_t n = static_cast<uint64_t>(t.numel());
  const uint64_t reserved = g.reserve(n + 2);  // room to round the start up and the end to a whole pair
  const uint64_t first = (reserved + 1) & ~uint64_t{1};
  const bool in_float = t.dtype() != kFloat64;  // float32, the half types and fp8 keep float's precision or less
  fill_blocks<double>(t, g, first, [&](const Generator& gg, uint64_t c, int64_t count, double* out) {
    if (in_float) cpu_kernels().run<&normals_float>(gg, c, count, out);  // per target (Note [CPU kernel dispatch])
    else normals(gg, c, count, out);
    if (mean != 0.0 || std != 1.0)
      for (int64_t k = 0; k < count; ++k) out[k] = mean + std * out[k];
  });
}

/// The op every random fill goes through: fill(t, gen) writes t's elements.
struct RandomFill {
  static constexpr std::string_view name = "random_";
  static constexpr bool supports_cuda = true;
  static constexpr bool elementwise = true;
  template <class Fill>
  static ops::OutputSpec meta(const Tensor& t, Generator*, const Fill&) { return {DimVector(t.sizes()), t.dtype()}; }
  template <class Fill>
  static void compute(const Tensor& out, const Tensor&, Generator* gen, const Fill& fill) {
    if (out.is_cuda()) {
      // The counter-based generator draws on the host and the values are copied over, so a seed
      // gives the same numbers on every device.
      Tensor host = empty(out.sizes(), out.dtype());
      fill(host, gen);
      Tensor(out).copy_(host);
      return;
    }
    Tensor o = out;
    fill(o, gen);
  }
  template <class Fill>
  static ops::Cost cost(const Tensor& out, const Tensor&, Generator*, const Fill&) { return {0, 0, out.nbytes()}; }
};

/// A factory's new tensor starts at version 0: its own fill is not a user's in-place write.
Tensor fresh(Tensor t) {
  t.storage()->reset_version();
  return t;
}

/// Fill t with value_at(generator, counter), one fresh counter per element.
template <class F>
Tensor random_fill(Tensor t, Generator* gen, F value_at) {
  return ops::apply_inplace<RandomFill>(t, gen, [value_at](Tensor& x, Generator* g) { fill_with(x, g, value_at); });
}

/// Fill t with mean + std · N(0, 1).
Tensor normal_fill(Tensor t, Generator* gen, double mean, double std) {
  TALLY_CHECK_TYPE_ERROR(is_floating_point(t.dtype()), "\"normal_kernel_cpu\" not implemented for '", dtype_name(t.dtype()), "'");
  return ops::apply_inplace<RandomFill>(t, gen, [mean, std](Tensor& x, Generator* g) { fill_normal(x, g, mean, std); });
}

/// The smallest and largest value of an integer dtype ({0, 1} for bool).
std::pair<int64_t, int64_t> integer_limits(Dtype dtype) {
  std::pair<int64_t, int64_t> limits{0, 1};
  dispatch(dtype, "integer_limits", [&]<class T>() {
    if constexpr (std::is_integral_v<T> && !std::is_same_v<T, bool>)
      limits = {static_cast<int64_t>(std::numeric_limits<T>::lowest()), static_cast<int64_t>(std::numeric_limits<T>::max())};
  });
  return limits;
}

/// Fill t with integers uniform on [low, high) (randint, random_).
Tensor random_from_to(Tensor t, int64_t low, int64_t high, Generator* gen) {
  TALLY_CHECK(low < high, "random_ expects 'from' to be less than 'to', but got from=", low, " >= to=", high);
  // Both ends must be values of the dtype, as torch checks: uint8 in [0, 300) would wrap.
  const Dtype dtype = t.dtype();
  double lowest, highest;
  if (is_floating_point(dtype)) {
    highest = finfo(dtype).max, lowest = -highest;
  } else {
    const auto [lo, hi] = integer_limits(dtype);
    lowest = static_cast<double>(lo), highest = static_cast<double>(hi);
  }
  TALLY_CHECK(static_cast<double>(low) >= lowest, "random_ expects 'from' casted to dtype to be within its range: from is out of bounds for ",
              dtype_name(dtype), " (from=", low, ")");
  TALLY_CHECK(static_cast<double>(high - 1) <= highest, "random_ expects 'to' casted to dtype to be within its range: to - 1 is out of ",
              "bounds for ", dtype_name(dtype), " (to=", high, ")");
  // In uint64 arithmetic, which wraps where int64 would overflow (high - low can exceed
  // INT64_MAX), and returning an int64: a double would round values past 2^53.
  const uint64_t range = static_cast<uint64_t>(high) - static_cast<uint64_t>(low);
  return random_fill(t, gen, [=](const Generator& g, uint64_t c) {
    return static_cast<int64_t>(static_cast<uint64_t>(low) + g.bits(c) % range);
  });
}

/// Fill t with U(a, b), as PyTorch: the dtype's number of random bits (Note [Uniform bits per
/// dtype]), scaled in double; U(0, 1) is then < 1 in every dtype.
Tensor uniform_fill(Tensor t, double a, double b, Generator* gen) {
  TALLY_CHECK(std::isfinite(a) && std::isfinite(b), "uniform_: the range [", a, ", ", b, ") must be finite");
  TALLY_CHECK(a <= b, "uniform_ expects to return a [from, to) range, but found from=", a, " > to=", b);
  TALLY_CHECK_TYPE_ERROR(t.is_floating_point(), "\"check_uniform_bounds\" not implemented for '", dtype_name(t.dtype()), "'");
  const UniformBits uniform(t.dtype());
  return random_fill(t, gen, [=](const Generator& g, uint64_t c) { return a + (b - a) * uniform(g.bits(c)); });
}

#endif  // TALLY_PRIMARY_PASS

}  // namespace

#if TALLY_PRIMARY_PASS

Tensor rand(IntArrayRef sizes, TensorOptions options, Generator* gen) {
  // U(0, 1): 0 + (1 − 0)·u is u exactly, so the same numbers as uniform_(0, 1).
  return fresh(uniform_fill(empty(sizes, options.dtype(options.dtype_or(get_default_dtype()))), 0, 1, gen));
}

Tensor randn(IntArrayRef sizes, TensorOptions options, Generator* gen) {
  const Dtype dtype = options.dtype_or(get_default_dtype());
  TALLY_CHECK_TYPE_ERROR(is_floating_point(dtype), "\"normal_kernel_cpu\" not implemented for '", dtype_name(dtype), "'");
  return fresh(normal_fill(empty(sizes, options.dtype(dtype)), gen, 0.0, 1.0));
}

Tensor randint(int64_t low, int64_t high, IntArrayRef sizes, TensorOptions options, Generator* gen) {
  return fresh(random_from_to(empty(sizes, options.dtype(options.dtype_or(kInt64))), low, high, gen));
}

Tensor randint(int64_t high, IntArrayRef sizes, TensorOptions options, Generator* gen) {
  return randint(0, high, sizes, options, gen);
}

namespace nn::init {

Tensor& normal_(Tensor& t, double mean, double std, Generator* gen) {
  NoGradGuard no_grad;  // initialisation is not part of any graph (torch.nn.init runs under no_grad)
  TALLY_CHECK(std >= 0.0, "normal expects std >= 0.0, but found std ", std);
  normal_fill(t, gen, mean, std);
  return t;
}

Tensor& uniform_(Tensor& t, double a, double b, Generator* gen) {
  NoGradGuard no_grad;  // initialisation is not part of any graph (torch.nn.init runs under no_grad)
  uniform_fill(t, a, b, gen);
  return t;
}

Tensor& trunc_normal_(Tensor& t, double mean, double std, double a, double b, Generator* gen) {
  NoGradGuard no_grad;  // initialisation is not part of any graph (torch.nn.init runs under no_grad)
  TALLY_CHECK(std > 0 && a <= b, "trunc_normal_: need std > 0 and a <= b, got std=", std, ", a=", a, ", b=", b);
  TALLY_CHECK_TYPE_ERROR(t.is_floating_point(), "\"check_uniform_bounds\" not implemented for '", dtype_name(t.dtype()), "'");
  // Inverse-CDF sampling, as PyTorch does: uniform between the CDF values of the (absolute)
  // bounds, mapped back through the normal's inverse CDF; exact for any bounds.
  auto cdf = [](double x) { return 0.5 * (1.0 + std::erf(x / std::sqrt(2.0))); };
  const double lo = 2 * cdf((a - mean) / std) - 1, hi = 2 * cdf((b - mean) / std) - 1;
  random_fill(t, gen, [=](const Generator& g, uint64_t c) {
    const double y = lo + (hi - lo) * g.uniform01(c);
    const double v = mean + std * std::sqrt(2.0) * erfinv(std::clamp(y, -1 + 1e-15, 1 - 1e-15));
    return std::clamp(v, a, b);
  });
  return t;
}

}  // namespace nn::init

Tensor& Tensor::uniform_(double from, double to, Generator* gen) const {
  uniform_fill(*this, from, to, gen);
  return const_cast<Tensor&>(*this);
}

Tensor& Tensor::normal_(double mean, double std, Generator* gen) const {
  TALLY_CHECK(std >= 0.0, "normal expects std >= 0.0, but found std ", std);
  normal_fill(*this, gen, mean, std);
  return const_cast<Tensor&>(*this);
}

Tensor& Tensor::random_(int64_t from, int64_t to, Generator* gen) const {
  random_from_to(*this, from, to, gen);
  return const_cast<Tensor&>(*this);
}

Tensor& Tensor::random_(int64_t to, Generator* gen) const { return random_(0, to, gen); }

Tensor& Tensor::random_(Generator* gen) const {
  // PyTorch's default range: [0, 2^digits] for a float (every integer there is exact), [0, max]
  // for an integer dtype (int64 stops one short: `to` is exclusive and int64).
  int64_t to;
  if (is_floating_point()) {
    const int digits = 1 - static_cast<int>(std::lround(std::log2(finfo(dtype()).eps)));  // eps = 2^(1 − digits)
    to = (int64_t{1} << digits) + 1;
  } else {
    const int64_t max = integer_limits(dtype()).second;
    to = max == std::numeric_limits<int64_t>::max() ? max : max + 1;
  }
  return random_(0, to, gen);
}

#endif  // TALLY_PRIMARY_PASS

}  // namespace tally

TALLY_CPU_KERNELS(random, &normals_float)
