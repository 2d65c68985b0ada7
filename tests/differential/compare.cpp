// Elements are decoded straight from memory with our own readers (not through tally's .to() or
// .contiguous()), so a bug in tally's conversions cannot hide itself in the comparison.

#include "differential/compare.h"

#include <bit>
#include <cmath>
#include <cstring>
#include <sstream>

namespace tally::difftest {
namespace {

double half_to_double(uint16_t h) {
  const int exp = (h >> 10) & 0x1F, mant = h & 0x3FF;
  const double sign = (h & 0x8000) ? -1.0 : 1.0;
  if (exp == 0x1F) return mant ? std::nan("") : sign * INFINITY;
  if (exp == 0) return sign * std::ldexp(mant, -24);
  return sign * std::ldexp(mant + 1024, exp - 25);
}

// The little-endian element of `dtype` at `p`, as a double.
double decode(const char* p, Dtype dtype) {
  switch (dtype) {
    case Dtype::Float32: { float f; std::memcpy(&f, p, 4); return f; }
    case Dtype::Float64: { double d; std::memcpy(&d, p, 8); return d; }
    case Dtype::Float16: { uint16_t h; std::memcpy(&h, p, 2); return half_to_double(h); }
    case Dtype::BFloat16: { uint16_t h; std::memcpy(&h, p, 2); return std::bit_cast<float>(uint32_t{h} << 16); }
    case Dtype::Int32: { int32_t v; std::memcpy(&v, p, 4); return v; }
    case Dtype::Int64: { int64_t v; std::memcpy(&v, p, 8); return static_cast<double>(v); }
    case Dtype::UInt8: return static_cast<unsigned char>(*p);
    case Dtype::Int8: return static_cast<signed char>(*p);
    case Dtype::Int16: { int16_t v; std::memcpy(&v, p, 2); return v; }
    case Dtype::Bool: return *p != 0;
    default: return std::nan("");
  }
}

int64_t decode_int(const char* p, Dtype dtype) {
  if (dtype == Dtype::Int64) { int64_t v; std::memcpy(&v, p, 8); return v; }
  return static_cast<int64_t>(decode(p, dtype));
}

std::string shape_str(IntArrayRef s) {
  std::ostringstream os;
  os << "[";
  for (size_t i = 0; i < s.size(); ++i) os << (i ? ", " : "") << s[i];
  return os.str() + "]";
}

// Byte offsets of a strided tensor's elements in row-major order.
std::vector<int64_t> element_offsets(const Tensor& t) {
  const int64_t n = t.numel(), nd = t.dim(), es = t.element_size();
  std::vector<int64_t> out;
  out.reserve(static_cast<size_t>(n));
  std::vector<int64_t> idx(static_cast<size_t>(nd), 0);
  for (int64_t k = 0; k < n; ++k) {
    int64_t off = 0;
    for (int64_t d = 0; d < nd; ++d) off += idx[d] * t.stride(d);
    out.push_back(off * es);
    for (int64_t d = nd - 1; d >= 0 && ++idx[d] == t.size(d); --d) idx[d] = 0;
  }
  return out;
}

std::string index_str(int64_t flat, IntArrayRef shape) {
  std::vector<int64_t> idx(shape.size());
  for (size_t d = shape.size(); d-- > 0;) {
    idx[d] = flat % shape[d];
    flat /= shape[d];
  }
  return shape_str(idx);
}

}  // namespace

Tolerance tolerance_for(Dtype dtype, bool accumulates, double max_abs_want) {
  Tolerance t;
  switch (dtype) {
    case Dtype::Float64: t = {1e-10, 1e-12}; break;
    case Dtype::Float32: t = {1e-5, 1e-6}; break;
    case Dtype::Float16: t = {2e-3, 1e-5}; break;    // two float16 ulps
    case Dtype::BFloat16: t = {1.6e-2, 1e-5}; break;  // two bfloat16 ulps: torch and tally may round differently once
    default: return t;                                 // integers and bool: exact
  }
  // Sums of terms of order 1 (every input domain is) carry rounding errors of order rtol even when
  // they cancel to a small result: torch's bfloat16 mean rounds the sum to bfloat16 before dividing.
  if (accumulates) t.atol = std::max(t.atol, t.rtol * std::max(1.0, max_abs_want));
  return t;
}

std::optional<std::string> compare(const Tensor& got_anywhere, const NpyArray& want, Dtype want_dtype, bool accumulates,
                                   bool exact_values) {
  const Tensor got = got_anywhere.is_cpu() ? got_anywhere : got_anywhere.cpu();  // a GPU result, read on the host
  std::ostringstream os;
  if (got.dtype() != want_dtype) {
    os << "dtype: tally " << dtype_name(got.dtype()) << ", torch " << dtype_name(want_dtype);
    return os.str();
  }
  if (got.sizes().vec() != want.shape) {
    os << "shape: tally " << shape_str(got.sizes()) << ", torch " << shape_str(want.shape);
    return os.str();
  }
  const Dtype dt = got.dtype();
  const int64_t es = got.element_size(), n = got.numel();
  const char* got_base = static_cast<const char*>(got.data_ptr());
  const std::vector<int64_t> offsets = element_offsets(got);
  const bool exact = !is_floating_point(dt);

  double max_abs_want = 0;
  for (int64_t i = 0; i < n && !exact; ++i) {
    const double w = decode(want.bytes.data() + i * es, dt);
    if (std::isfinite(w)) max_abs_want = std::max(max_abs_want, std::abs(w));
  }
  const Tolerance tol = exact_values ? Tolerance{} : tolerance_for(dt, accumulates, max_abs_want);

  int64_t bad = 0, worst = -1;
  double worst_excess = -1, worst_got = 0, worst_want = 0;
  for (int64_t i = 0; i < n; ++i) {
    const char* g = got_base + offsets[static_cast<size_t>(i)];
    const char* w = want.bytes.data() + i * es;
    double excess;  // > 0 means a mismatch; larger is worse
    if (exact) {
      excess = decode_int(g, dt) == decode_int(w, dt) ? 0 : 1;
    } else {
      const double gv = decode(g, dt), wv = decode(w, dt);
      if (std::isnan(wv) || std::isnan(gv) || std::isinf(wv) || std::isinf(gv)) {
        const bool same = (std::isnan(wv) && std::isnan(gv)) || gv == wv;
        excess = same ? 0 : INFINITY;
      } else {
        const double allowed = tol.atol + tol.rtol * std::abs(wv), diff = std::abs(gv - wv);
        excess = diff > allowed ? (allowed > 0 ? diff / allowed : diff) : 0;
      }
    }
    if (excess > 0) {
      ++bad;
      if (excess > worst_excess) {
        worst_excess = excess;
        worst = i;
        worst_got = decode(g, dt);
        worst_want = decode(w, dt);
      }
    }
  }
  if (bad == 0) return std::nullopt;
  os.precision(10);
  os << bad << " of " << n << " elements differ; worst at " << index_str(worst, want.shape) << ": tally "
     << worst_got << ", torch " << worst_want;
  if (!exact && !exact_values) os << " (rtol " << tol.rtol << ", atol " << tol.atol << ")";
  return os.str();
}

std::optional<std::string> compare_strides(const Tensor& got, const std::vector<int64_t>& want) {
  if (want.size() != static_cast<size_t>(got.dim())) return "strides: torch gives " + std::to_string(want.size()) + " dims";
  for (int64_t d = 0; d < got.dim(); ++d) {
    if (got.size(d) > 1 && got.stride(d) != want[static_cast<size_t>(d)]) {
      std::ostringstream why;
      why << "layout: strides " << got.strides() << ", torch's (";
      for (size_t i = 0; i < want.size(); ++i) why << (i ? ", " : "") << want[i];
      why << ")";
      return why.str();
    }
  }
  return std::nullopt;
}

}  // namespace tally::difftest
