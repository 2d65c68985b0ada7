// Tensor printing in PyTorch's repr format: tensor([[1., 2.], [3., 4.]], dtype=torch.float64).

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <sstream>
#include <string>
#include <vector>

#include "tally/core/tensor.h"

namespace tally {

namespace {

constexpr int64_t kSummarizeThreshold = 1000;  // torch's print options: threshold, edgeitems
constexpr int64_t kEdgeItems = 3;
constexpr size_t kLineWidth = 80;

/// One element as printed: an integer or bool exactly (an int64 does not fit a double's 53 bits),
/// a floating value as a double.
struct Value {
  double d = 0;
  int64_t i = 0;
};

struct Formatter {
  bool floating = false, is_bool = false, int_mode = true, sci_mode = false;
  size_t width = 1;

  std::string format(const Value& value) const {
    char buf[64];
    const double v = value.d;
    if (is_bool) return value.i != 0 ? "True" : "False";
    if (!floating) std::snprintf(buf, sizeof buf, "%lld", static_cast<long long>(value.i));
    else if (std::isnan(v)) return "nan";
    else if (std::isinf(v)) return v > 0 ? "inf" : "-inf";
    else if (sci_mode) std::snprintf(buf, sizeof buf, "%.4e", v);
    else if (int_mode) std::snprintf(buf, sizeof buf, "%.0f.", v);
    else std::snprintf(buf, sizeof buf, "%.4f", v);
    return buf;
  }
  std::string padded(const Value& v) const {
    std::string s = format(v);
    return std::string(width > s.size() ? width - s.size() : 0, ' ') + s;
  }
};

Value value_at(const Tensor& t, const std::vector<int64_t>& idx) {
  int64_t off = 0;
  for (size_t d = 0; d < idx.size(); ++d) off += idx[d] * t.strides()[d];
  return dispatch(t.dtype(), "print", [&]<class T>() {
    const T* p = static_cast<const T*>(t.data_ptr()) + off;
    if constexpr (std::is_integral_v<T>) return Value{static_cast<double>(*p), static_cast<int64_t>(*p)};
    else return Value{static_cast<double>(static_cast<compute_t<T>>(*p)), 0};
  });
}

/// Indices shown along a dim of size n: all, or the first and last kEdgeItems with a gap (-1).
std::vector<int64_t> shown(int64_t n, bool summarize) {
  std::vector<int64_t> out;
  if (summarize && n > 2 * kEdgeItems) {
    for (int64_t i = 0; i < kEdgeItems; ++i) out.push_back(i);
    out.push_back(-1);
    for (int64_t i = n - kEdgeItems; i < n; ++i) out.push_back(i);
  } else {
    for (int64_t i = 0; i < n; ++i) out.push_back(i);
  }
  return out;
}

void collect(const Tensor& t, std::vector<int64_t>& idx, bool summarize, std::vector<Value>& values) {
  const size_t d = idx.size();
  if (static_cast<int64_t>(d) == t.dim()) {
    values.push_back(value_at(t, idx));
    return;
  }
  for (int64_t i : shown(t.sizes()[d], summarize)) {
    if (i < 0) continue;
    idx.push_back(i);
    collect(t, idx, summarize, values);
    idx.pop_back();
  }
}

void render(const Tensor& t, std::vector<int64_t>& idx, bool summarize, const Formatter& f, size_t indent, std::ostream& os) {
  const size_t d = idx.size();
  if (static_cast<int64_t>(d) == t.dim()) {
    os << f.padded(value_at(t, idx));
    return;
  }
  const auto items = shown(t.sizes()[d], summarize);
  if (static_cast<int64_t>(d) == t.dim() - 1) {
    // The innermost dim wraps at torch's line width of 80, as many elements per line as fit.
    const size_t per_line = std::max<size_t>(1, (kLineWidth - indent) / (f.width + 2));
    os << '[';
    for (size_t k = 0; k < items.size(); ++k) {
      if (k > 0) os << (k % per_line == 0 ? ",\n" + std::string(indent + 1, ' ') : ", ");
      if (items[k] < 0) {
        os << " ...";
        continue;
      }
      idx.push_back(items[k]);
      os << f.padded(value_at(t, idx));
      idx.pop_back();
    }
    os << ']';
    return;
  }
  os << '[';
  for (size_t k = 0; k < items.size(); ++k) {
    if (k > 0) os << ',' << std::string(static_cast<size_t>(t.dim()) - d - 1, '\n') << std::string(indent + 1, ' ');
    if (items[k] < 0) {
      os << "...";
      continue;
    }
    idx.push_back(items[k]);
    render(t, idx, summarize, f, indent + 1, os);
    idx.pop_back();
  }
  os << ']';
}

/// The values part of the repr, from "[" to "]", with torch's formatter (_tensor_str.py): the
/// column width comes from the nonzero finite values only, so nan, inf and 0 do not widen it.
std::string values_str(const Tensor& t) {
  const bool summarize = t.numel() > kSummarizeThreshold;
  Formatter f;
  f.floating = t.is_floating_point();
  f.is_bool = t.dtype() == kBool;
  std::vector<Value> values;
  std::vector<int64_t> idx;
  collect(t, idx, summarize, values);
  if (f.floating) {
    double max_abs = 0, min_abs = INFINITY;
    for (const Value& v : values) {
      if (!std::isfinite(v.d) || v.d == 0) continue;
      if (v.d != std::nearbyint(v.d)) f.int_mode = false;
      max_abs = std::max(max_abs, std::abs(v.d));
      min_abs = std::min(min_abs, std::abs(v.d));
    }
    if (min_abs != INFINITY) {
      // torch's rule: integer-valued tensors too switch to scientific notation on a wide range.
      f.sci_mode = max_abs / min_abs > 1000 || max_abs > 1e8 || (!f.int_mode && min_abs < 1e-4);
    }
  }
  for (const Value& v : values) {
    if (f.floating && (!std::isfinite(v.d) || v.d == 0)) continue;
    f.width = std::max(f.width, f.format(v).size());
  }
  std::ostringstream os;
  render(t, idx, summarize, f, 7, os);
  return os.str();
}

/// A shape as Python prints a tuple: (2, 3), (0,), ().
std::string shape_tuple(IntArrayRef sizes) {
  std::string s = "(";
  for (size_t i = 0; i < sizes.size(); ++i) s += (i ? ", " : "") + std::to_string(sizes[i]);
  return s + (sizes.size() == 1 ? ",)" : ")");
}

/// torch's _add_suffixes: each suffix (device=..., size=..., dtype=...) follows ", " on the last
/// line, or starts a new line indented under the values when it would pass the line width. The
/// last line's length is counted as torch counts it, two more than its characters.
std::string add_suffixes(std::string s, const std::vector<std::string>& suffixes, size_t indent) {
  const size_t newline = s.rfind('\n');
  size_t last_line = newline == std::string::npos ? s.size() + 2 : s.size() - newline + 1;
  for (const std::string& suffix : suffixes) {
    if (last_line + suffix.size() + 2 > kLineWidth) {
      s += ",\n" + std::string(indent, ' ') + suffix;
      last_line = indent + suffix.size();
    } else {
      s += ", " + suffix;
      last_line += suffix.size() + 2;
    }
  }
  return s + ')';
}

}  // namespace

std::string Tensor::to_string() const {
  if (!defined()) return "[ Tensor (undefined) ]";
  const std::string dtype_suffix = "dtype=torch." + std::string(dtype_name(dtype()));
  std::vector<std::string> suffixes;
  // A GPU tensor's values print like a CPU one's, then its device is named; a meta tensor has no
  // values to print: tensor(..., device='meta', size=(2, 3)).
  if (!is_cpu()) suffixes.push_back("device='" + device().str() + "'");
  std::string body;
  if (device().is_meta()) {
    suffixes.push_back("size=" + shape_tuple(sizes()));
    if (dtype() != get_default_dtype()) suffixes.push_back(dtype_suffix);
    body = "...";
  } else if (numel() == 0) {
    // No elements to infer an int64 or bool dtype from, so only float32 goes without its name.
    if (dim() != 1) suffixes.push_back("size=" + shape_tuple(sizes()));
    if (dtype() != get_default_dtype()) suffixes.push_back(dtype_suffix);
    body = "[]";
  } else {
    if (dtype() != get_default_dtype() && dtype() != kInt64 && dtype() != kBool) suffixes.push_back(dtype_suffix);
    body = values_str(is_cpu() ? *this : cpu());
  }
  return add_suffixes("tensor(" + body, suffixes, 7);
}

}  // namespace tally
