// Tensor printing in PyTorch's repr format: tensor([[1., 2.], [3., 4.]], dtype=torch.float64).

#include <cmath>
#include <cstdio>
#include <sstream>

#include "tally/core/tensor.h"

namespace tally {

namespace {

constexpr int64_t kSummarizeThreshold = 1000;  // torch's print options: threshold, edgeitems
constexpr int64_t kEdgeItems = 3;
constexpr size_t kLineWidth = 80;

struct Formatter {
  bool floating = false, is_bool = false, int_mode = true, sci_mode = false;
  size_t width = 1;

  std::string format(double v) const {
    char buf[64];
    if (is_bool) return v != 0 ? "True" : "False";
    if (!floating) std::snprintf(buf, sizeof buf, "%lld", static_cast<long long>(v));
    else if (std::isnan(v)) return "nan";
    else if (std::isinf(v)) return v > 0 ? "inf" : "-inf";
    else if (sci_mode) std::snprintf(buf, sizeof buf, "%.4e", v);
    else if (int_mode) std::snprintf(buf, sizeof buf, "%.0f.", v);
    else std::snprintf(buf, sizeof buf, "%.4f", v);
    return buf;
  }
  std::string padded(double v) const {
    std::string s = format(v);
    return std::string(width > s.size() ? width - s.size() : 0, ' ') + s;
  }
};

double value_at(const Tensor& t, const std::vector<int64_t>& idx) {
  int64_t off = 0;
  for (size_t d = 0; d < idx.size(); ++d) off += idx[d] * t.strides()[d];
  return dispatch(t.dtype(), "print", [&]<class T>() {
    const T* p = static_cast<const T*>(t.data_ptr()) + off;
    return static_cast<double>(static_cast<compute_t<T>>(*p));
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

void collect(const Tensor& t, std::vector<int64_t>& idx, bool summarize, std::vector<double>& values) {
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

}  // namespace

std::string Tensor::to_string() const {
  if (!defined()) return "[ Tensor (undefined) ]";
  if (device().is_meta()) {
    // No values to print: PyTorch's form, tensor(..., device='meta', size=(2, 3)).
    std::ostringstream os;
    os << "tensor(..., device='meta', size=(";
    for (int64_t d = 0; d < dim(); ++d) os << (d ? ", " : "") << size(d);
    os << (dim() == 1 ? ",)" : ")");
    if (dtype() != kFloat32) os << ", dtype=torch." << dtype_name(dtype());
    os << ')';
    return os.str();
  }
  if (!is_cpu()) {
    // PyTorch prints a GPU tensor's values like a CPU one's, then names its device.
    std::string s = cpu().to_string();
    const size_t dtype_at = s.rfind(", dtype=");
    s.insert(dtype_at != std::string::npos ? dtype_at : s.size() - 1, ", device='" + device().str() + "'");
    return s;
  }
  std::ostringstream os;
  os << "tensor(";
  const bool summarize = numel() > kSummarizeThreshold;
  Formatter f;
  f.floating = is_floating_point();
  f.is_bool = dtype() == kBool;
  std::vector<double> values;
  std::vector<int64_t> idx;
  collect(*this, idx, summarize, values);
  if (f.floating) {
    double max_abs = 0, min_abs = INFINITY;
    for (double v : values) {
      if (!std::isfinite(v)) continue;
      if (v != std::nearbyint(v)) f.int_mode = false;
      if (v != 0) {
        max_abs = std::max(max_abs, std::abs(v));
        min_abs = std::min(min_abs, std::abs(v));
      }
    }
    if (min_abs != INFINITY) {
      // torch's rule: integer-valued tensors too switch to scientific notation on a wide range.
      f.sci_mode = max_abs / min_abs > 1000 || max_abs > 1e8 || (!f.int_mode && min_abs < 1e-4);
    }
  }
  for (double v : values) f.width = std::max(f.width, f.format(v).size());
  if (numel() == 0) os << "[]";
  else render(*this, idx, summarize, f, 7, os);
  const bool default_dtype = dtype() == kFloat32 || dtype() == kInt64 || dtype() == kBool;
  if (numel() == 0 && dim() != 1) os << ", size=(" << [&] {
      std::string s;
      for (int64_t i = 0; i < dim(); ++i) s += (i ? ", " : "") + std::to_string(sizes()[i]);
      return s + (dim() == 1 ? "," : "");
    }() << ')';
  if (!default_dtype) os << ", dtype=torch." << dtype_name(dtype());
  os << ')';
  return os.str();
}

}  // namespace tally
