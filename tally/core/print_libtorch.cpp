// Printing to a stream as libtorch prints (at::print, what `std::cout << t` gives in C++):
//
//    1.5000
//   -2.2500
//   [ CPUFloatType{2} ]
//
// Each matrix picks one format for its values: whole numbers at their width, else four decimals
// (fixed, with a common power-of-ten factor printed first when the values are large or small, or
// scientific when they span more than four decades). Tensors of more than two dims print each
// matrix under its index, "(1,.,.) = ", the first index counting fastest, as libtorch's does.

#include <algorithm>
#include <cmath>
#include <iomanip>
#include <iostream>
#include <ostream>
#include <string>
#include <vector>

#include "tally/core/tensor.h"
#include "tally/table/dtypes.h"

namespace tally {

namespace {

/// libtorch's names of a tensor's type: CPUFloatType, CUDALongType, ...
std::string type_string(const Tensor& t) {
#define TALLY_LIBTORCH_NAME_(Name, torch_name, bytes, libtorch_name, ...) #libtorch_name,
  static constexpr const char* kScalarNames[] = {TALLY_FORALL_DTYPES(TALLY_LIBTORCH_NAME_)};
#undef TALLY_LIBTORCH_NAME_
  const std::string backend = t.is_cuda() ? "CUDA" : t.device().is_meta() ? "Meta" : "CPU";
  return backend + kScalarNames[static_cast<int>(t.dtype())] + "Type";
}

/// Restores a stream's number formatting when it goes.
class KeepFormat {
 public:
  explicit KeepFormat(std::ostream& os) : os_(os), saved_(nullptr) { saved_.copyfmt(os); }
  ~KeepFormat() { os_.copyfmt(saved_); }
  KeepFormat(const KeepFormat&) = delete;
  KeepFormat& operator=(const KeepFormat&) = delete;

 private:
  std::ostream& os_;
  std::ios saved_;
};

/// Number of digits before the point of |v| (1 for 0), as libtorch counts a value's decade.
double decade(double v) { return v != 0 ? std::floor(std::log10(v)) + 1 : 1; }

/// The format of `values` (one matrix, or a 1-D tensor): sets the stream's float notation and
/// returns {the factor values are divided by, the column width}.
std::pair<double, int> choose_format(std::ostream& os, const std::vector<double>& values) {
  if (values.empty()) return {1.0, 0};
  bool whole = true;
  double lo = 0, hi = 0;
  bool any_finite = false;
  for (double z : values) {
    if (!std::isfinite(z)) continue;
    if (z != std::ceil(z)) whole = false;
    if (!any_finite) {
      lo = hi = std::fabs(z);
      any_finite = true;
      continue;
    }
    lo = std::min(lo, std::fabs(z));
    // libtorch compares the signed value here, so a negative never raises the maximum; kept, as
    // the widths depend on it.
    if (z > hi) hi = std::fabs(z);
  }
  const double exp_min = any_finite ? decade(lo) : 1, exp_max = any_finite ? decade(hi) : 1;
  if (whole) {
    if (exp_max > 9) {
      os << std::scientific << std::setprecision(4);
      return {1.0, 11};
    }
    os.unsetf(std::ios_base::floatfield);
    return {1.0, static_cast<int>(exp_max) + 1};
  }
  if (exp_max - exp_min > 4) {
    os << std::scientific << std::setprecision(4);
    return {1.0, std::fabs(exp_max) > 99 || std::fabs(exp_min) > 99 ? 12 : 11};
  }
  os << std::fixed << std::setprecision(4);
  if (exp_max > 5 || exp_max < 0) return {std::pow(10, exp_max - 1), 7};
  return {1.0, exp_max == 0 ? 7 : static_cast<int>(exp_max) + 6};
}

void print_scale(std::ostream& os, double scale) {
  KeepFormat keep(os);
  os.unsetf(std::ios_base::floatfield);
  os << scale << " *" << std::endl;
}

std::vector<double> values_of(const Tensor& t) {
  const Tensor d = t.to(Device(kCPU), kFloat64).contiguous();
  const double* p = d.data_ptr<double>();
  return std::vector<double>(p, p + d.numel());
}

/// A matrix, `indent` spaces in, columns split into blocks that fit `linesize`.
void print_matrix(std::ostream& os, const Tensor& m, int64_t linesize, int64_t indent) {
  const std::vector<double> v = values_of(m);
  const auto [scale, width] = choose_format(os, v);
  const std::string pad(static_cast<size_t>(indent), ' ');
  const int64_t rows = m.size(0), cols = m.size(1);
  const int64_t per_line = (linesize - indent) / (width + 1);
  os << pad;
  for (int64_t first = 0; first < cols;) {
    const int64_t last = std::min(first + per_line, cols) - 1;
    if (per_line < cols) {
      // As libtorch's: without a factor line after it, the block's first row follows this text
      // on the same line.
      if (first != 0) os << std::endl;
      os << "Columns " << first + 1 << " to " << last + 1 << pad;
    }
    if (scale != 1) {
      print_scale(os, scale);
      os << pad;
    }
    for (int64_t r = 0; r < rows; ++r) {
      for (int64_t c = first; c <= last; ++c) {
        os << std::setw(width) << v[static_cast<size_t>(r * cols + c)] / scale;
        if (c != last) {
          os << ' ';
          continue;
        }
        os << std::endl;
        if (r != rows - 1) os << pad << (scale != 1 ? " " : "");
      }
    }
    first = last + 1;
  }
}

void print_sizes(std::ostream& os, const Tensor& t) {
  os << "[ " << type_string(t) << '{';
  for (int64_t d = 0; d < t.dim(); ++d) os << (d ? "," : "") << t.size(d);
  os << "} ]";
}

}  // namespace

std::ostream& print(std::ostream& os, const Tensor& t, int64_t linesize) {
  KeepFormat keep(os);
  if (!t.defined()) return os << "[ Tensor (undefined) ]";
  if (t.device().is_meta() || t.numel() == 0) {
    print_sizes(os, t);
    return os;
  }
  if (t.dim() == 0) {
    os.unsetf(std::ios_base::floatfield);
    os << values_of(t)[0] << std::endl;
  } else if (t.dim() == 1) {
    const std::vector<double> v = values_of(t);
    const auto [scale, width] = choose_format(os, v);
    if (scale != 1) print_scale(os, scale);
    for (double z : v) os << std::setw(width) << z / scale << std::endl;
  } else if (t.dim() == 2) {
    print_matrix(os, t, linesize, 0);
  } else {
    // Each matrix under its index over the leading dims, the first index counting fastest.
    std::vector<int64_t> at(static_cast<size_t>(t.dim() - 2), 0);
    for (bool first = true;; first = false) {
      if (!first) os << std::endl;
      os << '(';
      Tensor m = t;
      for (size_t i = 0; i < at.size(); ++i) {
        m = m.select(0, at[i]);
        os << at[i] + 1 << ',';
      }
      os << ".,.) = " << std::endl;
      print_matrix(os, m, linesize, 1);
      size_t i = 0;
      while (i < at.size() && ++at[i] == t.size(static_cast<int64_t>(i))) at[i++] = 0;
      if (i == at.size()) break;
    }
  }
  print_sizes(os, t);
  return os;
}

void print(const Tensor& t, int64_t linesize) { print(std::cout, t, linesize); }

std::ostream& operator<<(std::ostream& os, const Tensor& t) { return print(os, t, 80); }

}  // namespace tally
