// matmul: shape rule and batching here, the products in kernels/cpu/matmul (oneDNN).

#include "tally/ops/matmul.h"

#include "tally/core/geometry.h"
#include "tally/kernels/cpu/matmul.h"
#include "tally/ops/apply.h"
#include "tally/ops/creation.h"
#include "tally/ops/reduce.h"

namespace tally {

namespace {

/// The strides of `t`'s leading `nbatch` dims merged into one, if they merge (stride 0 for a
/// broadcast batch), else nullopt.
std::optional<int64_t> merged_batch_stride(const Tensor& t, int64_t nbatch) {
  DimVector sizes(t.sizes().begin(), t.sizes().begin() + nbatch);
  DimVector strides(t.strides().begin(), t.strides().begin() + nbatch);
  int64_t total = geometry::numel(sizes);
  if (total <= 1) return int64_t{0};
  auto s = geometry::view_strides(sizes, strides, {total});
  if (s) return (*s)[0];
  return std::nullopt;
}

struct Matmul {
  static constexpr std::string_view name = "matmul";
  static Tensor forward(const Tensor& a, const Tensor& b) {
    TALLY_CHECK(a.dim() >= 1 && b.dim() >= 1, "both arguments to matmul need to be at least 1D, but they are ", a.dim(),
                "D and ", b.dim(), "D");
    TALLY_CHECK_TYPE_ERROR(a.dtype() == b.dtype(), "expected m1 and m2 to have the same dtype, but got: ", dtype_name(a.dtype()),
                           " != ", dtype_name(b.dtype()));
    // Promote vectors to matrices, remembering which dims to drop at the end.
    Tensor x = a.dim() == 1 ? a.unsqueeze(0) : a;
    Tensor y = b.dim() == 1 ? b.unsqueeze(1) : b;
    const int64_t n = x.size(-2), k = x.size(-1), k2 = y.size(-2), m = y.size(-1);
    TALLY_CHECK(k == k2, a.dim() <= 2 && b.dim() <= 2 ? "mat1 and mat2 shapes cannot be multiplied (" : "matmul: shapes cannot be multiplied (",
                n, "x", k, " and ", k2, "x", m, "); input shapes ", a.sizes(), " and ", b.sizes());
    DimVector bx(x.sizes().begin(), x.sizes().end() - 2), by(y.sizes().begin(), y.sizes().end() - 2);
    DimVector batch = geometry::broadcast_shapes(bx, by);
    const int64_t nbatch = static_cast<int64_t>(batch.size());
    auto with = [&](int64_t r, int64_t c) {
      DimVector s = batch;
      s.push_back(r);
      s.push_back(c);
      return s;
    };
    x = x.expand(with(n, k));
    y = y.expand(with(k, m));
    auto xs = merged_batch_stride(x, nbatch);
    if (!xs) { x = x.contiguous(); xs = n * k; }
    auto ys = merged_batch_stride(y, nbatch);
    if (!ys) { y = y.contiguous(); ys = k * m; }
    const int64_t nb = geometry::numel(batch);
    Tensor out = empty(with(n, m), a.dtype());
    if (out.numel() > 0) {
      kernels::matmul(a.dtype(), nb, n, m, k, {x.data_ptr(), *xs, x.stride(-2), x.stride(-1)},
                      {y.data_ptr(), *ys, y.stride(-2), y.stride(-1)}, out.data_ptr());
    }
    // Drop the dims that the 1-D operands did not have.
    DimVector final_sizes = batch;
    if (a.dim() > 1) final_sizes.push_back(n);
    if (b.dim() > 1) final_sizes.push_back(m);
    return out.view(final_sizes);
  }
  static ops::Cost cost(const Tensor& out, const Tensor& a, const Tensor& b) {
    const int64_t k = a.size(-1);
    return {2 * out.numel() * k, a.nbytes() + b.nbytes(), out.nbytes()};
  }
  // C = A·B: dA = dC·Bᵀ, dB = Aᵀ·dC — two matmuls, so backward costs twice the forward's FLOPs
  // (the lecture's 2 : 4 rule); each is skipped when its input needs no gradient.
  static TensorList backward(const ops::BackwardContext& c, const Tensor& a, const Tensor& b) {
    Tensor a2 = a.dim() == 1 ? a.unsqueeze(0) : a;
    Tensor b2 = b.dim() == 1 ? b.unsqueeze(1) : b;
    DimVector out_sizes = DimVector(c.grad.sizes());  // the product's shape with the vector dims restored
    if (a.dim() == 1) out_sizes.insert(out_sizes.end() - (b.dim() == 1 ? 0 : 1), 1);
    if (b.dim() == 1) out_sizes.push_back(1);
    Tensor g = c.grad.reshape(out_sizes);
    TensorList grads(2);
    if (c.needs_grad(0)) grads[0] = sum_to_size(matmul(g, b2.transpose(-1, -2)), a2.sizes()).reshape(a.sizes());
    if (c.needs_grad(1)) grads[1] = sum_to_size(matmul(a2.transpose(-1, -2), g), b2.sizes()).reshape(b.sizes());
    return grads;
  }
};

}  // namespace

Tensor matmul(const Tensor& a, const Tensor& b) { return ops::apply<Matmul>(a, b); }

Tensor mm(const Tensor& a, const Tensor& b) {
  TALLY_CHECK(a.dim() == 2, "self must be a matrix, got ", a.dim(), "-D tensor of shape ", a.sizes());
  TALLY_CHECK(b.dim() == 2, "mat2 must be a matrix, got ", b.dim(), "-D tensor of shape ", b.sizes());
  return matmul(a, b);
}

Tensor bmm(const Tensor& a, const Tensor& b) {
  TALLY_CHECK(a.dim() == 3 && b.dim() == 3, "batch1 and batch2 must be 3D tensors, got ", a.sizes(), " and ", b.sizes());
  TALLY_CHECK(a.size(0) == b.size(0), "batch1 and batch2 must have same number of batches, got ", a.size(0), " and ", b.size(0));
  return matmul(a, b);
}

Tensor Tensor::matmul(const Tensor& other) const { return tally::matmul(*this, other); }

}  // namespace tally
