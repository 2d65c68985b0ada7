// Random fills. Every draw maps counter i to a value with a pure function, so the fill is
// parallel and reproducible. Cost: bytes written (random generation is not counted as FLOPs).

#include "tally/ops/random.h"

#include <cmath>

#include "tally/kernels/cpu/parallel.h"
#include "tally/ops/apply.h"
#include "tally/ops/creation.h"

namespace tally {

namespace {

double uniform01(uint64_t bits) { return static_cast<double>(bits >> 11) * 0x1.0p-53; }

double normal_at(const Generator& g, uint64_t c) {
  // Box–Muller on two independent uniforms; u1 in (0, 1] so the log is finite.
  const double u1 = 1.0 - uniform01(g.bits(2 * c));
  const double u2 = uniform01(g.bits(2 * c + 1));
  return std::sqrt(-2.0 * std::log(u1)) * std::cos(2.0 * M_PI * u2);
}

/// Inverse of erf on (-1, 1): a rational first guess refined by Newton steps on std::erf.
double erfinv(double y) {
  const double w = -std::log((1.0 - y) * (1.0 + y));
  double x = y * (w < 5 ? 0.886226925 + 0.1 * w : 1.0 + 0.5 * std::sqrt(w - 5 + 1e-12) + 0.2 * std::sqrt(w));
  for (int i = 0; i < 4; ++i) x -= (std::erf(x) - y) / (2.0 / std::sqrt(M_PI) * std::exp(-x * x));
  return x;
}

/// Write value_at(counter) into every element of t (contiguous), parallel.
template <class F>
void fill_with(Tensor& t, Generator* gen, F value_at) {
  Generator& g = gen ? *gen : default_generator();
  const uint64_t first = g.reserve(static_cast<uint64_t>(t.numel()));
  Tensor dst = t.is_contiguous() ? t : empty(t.sizes(), t.dtype());
  dispatch(t.dtype(), "random", [&]<class T>() {
    T* p = static_cast<T*>(dst.data_ptr());
    kernels::parallel_for(dst.numel(), 4096, [&](int64_t b, int64_t e) {
      for (int64_t i = b; i < e; ++i) {
        const double v = value_at(g, first + static_cast<uint64_t>(i));
        if constexpr (std::is_integral_v<T>) p[i] = static_cast<T>(v);
        else p[i] = cast_to<T>(v);
      }
    });
  });
  if (!dst.is_same(t)) t.copy_(dst);
}

struct RandomFill {
  static constexpr std::string_view name = "random_";
  static constexpr bool inplace = true;
  template <class F>
  static Tensor forward(const Tensor& t, Generator* gen, const F& value_at) {
    Tensor out = t;
    fill_with(out, gen, value_at);
    return out;
  }
  template <class F>
  static ops::Cost cost(const Tensor& out, const Tensor&, Generator*, const F&) { return {0, 0, out.nbytes()}; }
};

template <class F>
Tensor random_fill(Tensor t, Generator* gen, F value_at) { return ops::apply<RandomFill>(t, gen, value_at); }

}  // namespace

Tensor rand(IntArrayRef sizes, Dtype dtype, Generator* gen) {
  TALLY_CHECK_TYPE_ERROR(is_floating_point(dtype), "\"check_uniform_bounds\" not implemented for '", dtype_name(dtype), "'");
  return random_fill(empty(sizes, dtype), gen, [](const Generator& g, uint64_t c) { return uniform01(g.bits(c)); });
}

Tensor randn(IntArrayRef sizes, Dtype dtype, Generator* gen) {
  TALLY_CHECK_TYPE_ERROR(is_floating_point(dtype), "\"normal_kernel_cpu\" not implemented for '", dtype_name(dtype), "'");
  return random_fill(empty(sizes, dtype), gen, normal_at);
}

Tensor randint(int64_t low, int64_t high, IntArrayRef sizes, Dtype dtype, Generator* gen) {
  TALLY_CHECK(low < high, "random_ expects 'from' to be less than 'to', but got from=", low, " >= to=", high);
  const uint64_t range = static_cast<uint64_t>(high - low);
  return random_fill(empty(sizes, dtype), gen, [=](const Generator& g, uint64_t c) {
    return static_cast<double>(low + static_cast<int64_t>(g.bits(c) % range));
  });
}

Tensor randint(int64_t high, IntArrayRef sizes, Dtype dtype, Generator* gen) { return randint(0, high, sizes, dtype, gen); }

namespace nn::init {

Tensor& normal_(Tensor& t, double mean, double std, Generator* gen) {
  NoGradGuard no_grad;  // initialisation is not part of any graph (torch.nn.init runs under no_grad)
  random_fill(t, gen, [=](const Generator& g, uint64_t c) { return mean + std * normal_at(g, c); });
  return t;
}

Tensor& uniform_(Tensor& t, double a, double b, Generator* gen) {
  NoGradGuard no_grad;  // initialisation is not part of any graph (torch.nn.init runs under no_grad)
  random_fill(t, gen, [=](const Generator& g, uint64_t c) { return a + (b - a) * uniform01(g.bits(c)); });
  return t;
}

Tensor& trunc_normal_(Tensor& t, double mean, double std, double a, double b, Generator* gen) {
  NoGradGuard no_grad;  // initialisation is not part of any graph (torch.nn.init runs under no_grad)
  TALLY_CHECK(std > 0 && a < b, "trunc_normal_: need std > 0 and a < b, got std=", std, ", a=", a, ", b=", b);
  // Inverse-CDF sampling, as PyTorch does: uniform between the CDF values of the (absolute)
  // bounds, mapped back through the normal's inverse CDF; exact for any bounds.
  auto cdf = [](double x) { return 0.5 * (1.0 + std::erf(x / std::sqrt(2.0))); };
  const double lo = 2 * cdf((a - mean) / std) - 1, hi = 2 * cdf((b - mean) / std) - 1;
  random_fill(t, gen, [=](const Generator& g, uint64_t c) {
    const double y = lo + (hi - lo) * uniform01(g.bits(c));
    const double v = mean + std * std::sqrt(2.0) * erfinv(std::clamp(y, -1 + 1e-15, 1 - 1e-15));
    return std::clamp(v, a, b);
  });
  return t;
}

}  // namespace nn::init

}  // namespace tally
