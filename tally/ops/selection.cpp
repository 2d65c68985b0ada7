// Elements chosen by a condition or a position: where (and masked_fill, which is where with a
// number), triu and tril; and the comparisons of whole tensors, equal and allclose. Apart from
// unary.cpp, which holds the one-input elementwise ops.

#include <algorithm>
#include <cmath>

#include "tally/core/geometry.h"
#include "tally/kernels/cpu/dispatch.h"
#include "tally/ops/cuda_launch.h"
#include "tally/ops/elementwise.h"
#include "tally/ops/elementwise_common.h"
#include "tally/ops/reduce.h"
#include "tally/ops/registry.h"

namespace tally {

namespace {

struct Where {
  static constexpr std::string_view name = "where";
  static constexpr bool supports_cuda = true;
  static constexpr bool elementwise = true;
  static ops::OutputSpec meta(const Tensor& cond, const Tensor& a, const Tensor& b) {
    TALLY_CHECK_TYPE_ERROR(cond.dtype() == kBool || cond.dtype() == kUInt8, "where expected condition to be a boolean tensor, but got a tensor with dtype ",
                           dtype_name(cond.dtype()));
    return {geometry::broadcast_shapes(geometry::broadcast_shapes(cond.sizes(), a.sizes()), b.sizes()), result_type(a, b)};
  }
  static void compute(const Tensor& out, const Tensor& cond, const Tensor& a, const Tensor& b) {
    const Dtype dt = out.dtype();
    Tensor ca = a.to(dt), cb = b.to(dt), cc = cond.to(kBool);
    if (out.is_cuda()) return kernels::cuda::where(ops::cuda_launch<4>(out, {&cc, &ca, &cb}));
    cpu_kernels().run<&Where::kernel>(ops::make_loop<4>(out, {&cc, &ca, &cb}), dt);
  }
  static void kernel(const kernels::StridedLoop<4>& loop, Dtype dt) {
    // Choosing copies bits, so the loop runs on unsigned integers of the element's size, and
    // the condition is read as bytes: GCC vectorises neither a select of 16-bit float structs nor
    // any loop that loads bool, and a branch per element mispredicts on half of a random mask.
    dispatch(dt, "where", [&]<class T>() {
      using Bits = kernels::BitsOf<T>;
      kernels::ternary_kernel<Bits, uint8_t, Bits, Bits>(loop, [](uint8_t c, Bits x, Bits y) { return c != 0 ? x : y; });
    });
  }
  static ops::Cost cost(const Tensor& out, const Tensor& c, const Tensor& a, const Tensor& b) {
    return ops::elementwise_cost(out, {&c, &a, &b}, 0);
  }
  // Each branch gets the gradient where it was chosen, reduced to its own shape: only the
  // condition's values are read.
  static ops::SavedTensors saved(const SmallVector<bool, 4>&) { return {{true, false, false}, false}; }
  static TensorList backward(const ops::BackwardContext& c, const Tensor& cond, const Tensor& a, const Tensor& b) {
    TensorList grads(3);
    Tensor zero = wrapped_number(0, c.grad.dtype(), c.grad);
    if (c.needs_grad(1)) grads[1] = sum_to_size(where(cond, c.grad, zero), a.sizes()).to(a.dtype());
    if (c.needs_grad(2)) grads[2] = sum_to_size(where(cond, zero, c.grad), b.sizes()).to(b.dtype());
    return grads;
  }
};

struct Triangle {
  static constexpr std::string_view name = "triu_tril";
  static constexpr bool supports_cuda = true;  // a clone and fills of views: any device
  static constexpr bool forward_on_meta = true;
  static Tensor forward(const Tensor& x, int64_t diagonal, bool upper) {
    maybe_wrap_dim(-2, x.dim(), false);  // PyTorch's IndexError for fewer than 2 dims: the rows' dim is out of range
    Tensor out = x.clone(MemoryFormat::Contiguous);  // row-major, as PyTorch's triu/tril give, so the reshape below is a view
    const int64_t rows = x.size(-2), cols = x.size(-1);
    Tensor mat = out.reshape(geometry::fold_leading_dims(out.sizes(), 2));
    // Zero the part outside the triangle one row at a time, through views.
    for (int64_t r = 0; r < rows; ++r) {
      Tensor row = mat.select(1, r);
      if (upper) {
        const int64_t stop = std::clamp<int64_t>(r + diagonal, 0, cols);
        if (stop > 0) row.slice(1, 0, stop).fill_(0);
      } else {
        const int64_t start = std::clamp<int64_t>(r + diagonal + 1, 0, cols);
        if (start < cols) row.slice(1, start, cols).fill_(0);
      }
    }
    return out;
  }
  static ops::Cost cost(const Tensor& out, const Tensor& x, int64_t, bool) { return {0, ops::bytes_held(x), out.nbytes()}; }
  static constexpr bool backward_reads_values = false;  // the gradient is masked by position alone
  static TensorList backward(const ops::BackwardContext& c, const Tensor&, int64_t diagonal, bool upper) {
    return {upper ? triu(c.grad, diagonal) : tril(c.grad, diagonal)};
  }
};

}  // namespace

#if TALLY_PRIMARY_PASS
Tensor where(const Tensor& condition, const Tensor& a, const Tensor& b) { return ops::apply<Where>(condition, a, b); }
Tensor masked_fill(const Tensor& x, const Tensor& mask, Scalar value) {
  TALLY_CHECK_TYPE_ERROR(mask.dtype() == kBool, "masked_fill_ only supports boolean masks, but got mask with dtype ",
                         dtype_name(mask.dtype()));
  // Out of place, x and the mask broadcast together, as PyTorch's masked_fill: a [4, 2, 3] mask on
  // a [2, 3] x gives [4, 2, 3].
  check_scalar_fits(value, x.dtype(), "masked_fill");
  return where(mask, wrapped_number(value, x.dtype(), x), x);
}
Tensor triu(const Tensor& x, int64_t diagonal) { return ops::apply<Triangle>(x, diagonal, true); }
Tensor tril(const Tensor& x, int64_t diagonal) { return ops::apply<Triangle>(x, diagonal, false); }

Tensor& where_out(Tensor& out, const Tensor& condition, const Tensor& a, const Tensor& b) {
  return ops::apply_out<Where>(out, condition, a, b);
}

Tensor Tensor::masked_fill(const Tensor& mask, Scalar value) const { return tally::masked_fill(*this, mask, value); }
Tensor Tensor::triu(int64_t diagonal) const { return tally::triu(*this, diagonal); }
Tensor Tensor::tril(int64_t diagonal) const { return tally::tril(*this, diagonal); }

bool equal(const Tensor& a, const Tensor& b) {
  if (!(a.sizes() == b.sizes())) return false;
  return (a == b).all().item<bool>();
}

bool allclose(const Tensor& a, const Tensor& b, double rtol, double atol, bool equal_nan) {
  ops::common_device({&a, &b});  // a CPU and a GPU tensor are never compared silently
  TALLY_CHECK(rtol >= 0, "rtol must be greater than or equal to zero, but got ", rtol);
  TALLY_CHECK(atol >= 0, "atol must be greater than or equal to zero, but got ", atol);
  const DimVector shape = geometry::broadcast_shapes(a.sizes(), b.sizes());  // both sides broadcast, as torch's
  if (!a.is_floating_point() && !b.is_floating_point()) {
    // Integers compare exactly, in int64: float64 would merge values past 2^53.
    const Tensor x = a.expand(shape).to(kInt64).cpu().contiguous(), y = b.expand(shape).to(kInt64).cpu().contiguous();
    const int64_t* px = x.data_ptr<int64_t>();
    const int64_t* py = y.data_ptr<int64_t>();
    for (int64_t i = 0; i < x.numel(); ++i) {
      if (px[i] == py[i]) continue;
      const auto ux = static_cast<uint64_t>(px[i]), uy = static_cast<uint64_t>(py[i]);
      const double diff = static_cast<double>(px[i] > py[i] ? ux - uy : uy - ux);
      if (!(diff <= atol + rtol * std::abs(static_cast<double>(py[i])))) return false;
    }
    return true;
  }
  Tensor x = a.expand(shape).to(kFloat64).cpu().contiguous(), y = b.expand(shape).to(kFloat64).cpu().contiguous();
  const double* px = x.data_ptr<double>();
  const double* py = y.data_ptr<double>();
  for (int64_t i = 0; i < x.numel(); ++i) {
    if (std::isnan(px[i]) || std::isnan(py[i])) {
      if (!(equal_nan && std::isnan(px[i]) && std::isnan(py[i]))) return false;
      continue;
    }
    if (px[i] == py[i]) continue;  // equal infinities
    // An infinity is close only to itself: |1 - inf| <= rtol·inf would hold.
    if (!std::isfinite(px[i]) || !std::isfinite(py[i])) return false;
    if (!(std::abs(px[i] - py[i]) <= atol + rtol * std::abs(py[i]))) return false;
  }
  return true;
}
bool Tensor::equal(const Tensor& other) const { return tally::equal(*this, other); }
bool Tensor::allclose(const Tensor& other, double rtol, double atol, bool equal_nan) const {
  return tally::allclose(*this, other, rtol, atol, equal_nan);
}

#endif  // TALLY_PRIMARY_PASS

}  // namespace tally

TALLY_CPU_KERNELS(selection, &Where::kernel)
