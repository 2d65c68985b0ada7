// matmul: shape rule and batching here, the products in kernels/cpu/matmul (oneDNN).

#include "tally/ops/matmul.h"

#include "tally/core/geometry.h"
#include "tally/cuda/runtime.h"
#include "tally/kernels/cpu/matmul.h"
#include "tally/kernels/cuda/kernels.h"
#include "tally/ops/apply.h"
#include "tally/ops/creation.h"
#include "tally/ops/elementwise.h"
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

/// A CUDA matmul operand (rows × cols at `t`'s last two dims): cuBLASLt reads a matrix row-major
/// (col stride 1) or column-major (row stride 1) with a leading dimension at least its extent;
/// a size-1 dim may have any stride. Anything else is packed row-major first.
kernels::cuda::Matrix cuda_operand(Tensor& t, int64_t& batch_stride, int64_t rows, int64_t cols) {
  int64_t rs = t.stride(-2), cs = t.stride(-1);
  if ((cs == 1 || cols == 1) && (rs >= std::max<int64_t>(cols, 1) || rows == 1)) {
    cs = 1;
    rs = rows == 1 ? std::max<int64_t>(cols, 1) : rs;
  } else if ((rs == 1 || rows == 1) && (cs >= std::max<int64_t>(rows, 1) || cols == 1)) {
    rs = 1;
    cs = cols == 1 ? std::max<int64_t>(rows, 1) : cs;
  } else {
    t = t.contiguous();
    batch_stride = rows * cols;
    rs = cols;
    cs = 1;
  }
  return {t.data_ptr(), batch_stride, rs, cs};
}

/// Make `t`'s last two dims column-major (FP8 tensor cores read B that way).
Tensor column_major(const Tensor& t) { return t.transpose(-1, -2).contiguous().transpose(-1, -2); }

/// `t` with its batch dims packed, each matrix keeping its orientation: a column-major matrix
/// (a transposed view, as kᵀ in attention's scores) is copied column-major, so the copy moves
/// whole columns instead of transposing element by element, and the product reads it as it did.
Tensor packed(const Tensor& t) { return t.stride(-1) != 1 && t.stride(-2) == 1 ? column_major(t) : t.contiguous(); }

/// matmul's shape rule: vectors promoted to matrices, the batch dims broadcast.
struct MatmulShape {
  int64_t n, k, m;
  DimVector batch;
  MatmulShape(const Tensor& a, const Tensor& b) {
    TALLY_CHECK(a.dim() >= 1 && b.dim() >= 1, "both arguments to matmul need to be at least 1D, but they are ", a.dim(),
                "D and ", b.dim(), "D");
    n = a.dim() == 1 ? 1 : a.size(-2);
    k = a.size(-1);
    const int64_t k2 = b.dim() == 1 ? b.size(0) : b.size(-2);
    m = b.dim() == 1 ? 1 : b.size(-1);
    TALLY_CHECK(k == k2, a.dim() <= 2 && b.dim() <= 2 ? "mat1 and mat2 shapes cannot be multiplied (" : "matmul: shapes cannot be multiplied (",
                n, "x", k, " and ", k2, "x", m, "); input shapes ", a.sizes(), " and ", b.sizes());
    const IntArrayRef as = a.sizes(), bs = b.sizes();
    DimVector bx(as.begin(), as.end() - std::min<int64_t>(a.dim(), 2)), by(bs.begin(), bs.end() - std::min<int64_t>(b.dim(), 2));
    batch = geometry::broadcast_shapes(bx, by);
  }
  /// The batch dims followed by (r, c).
  DimVector with(int64_t r, int64_t c) const {
    DimVector s = batch;
    s.push_back(r);
    s.push_back(c);
    return s;
  }
};

/// The gradient of b, a matrix every matrix of a's batch multiplies (a layer's weight), from the
/// product's gradient g: one product over all the batch's rows (K × nb·n by nb·n × N), not nb
/// products summed afterwards. It is made in b's own layout: for a transposed weight (linear's
/// w.t()) the transposed product, so the weight itself receives a dense gradient (its float32
/// cast, its accumulation and the optimizer then read it in order, not across a transpose).
Tensor shared_matrix_grad(const Tensor& a, const Tensor& g, const Tensor& b) {
  const Tensor af = a.reshape(geometry::fold_leading_dims(a.sizes(), 1)), gf = g.reshape(geometry::fold_leading_dims(g.sizes(), 1));
  const bool transposed = b.stride(0) == 1 && b.stride(1) != 1;
  return transposed ? matmul(gf.transpose(0, 1), af).transpose(0, 1) : matmul(af.transpose(0, 1), gf);
}

/// The dtypes a product takes, on every device, as in PyTorch: float8 products go through
/// scaled_mm, never a plain product; bool has none.
void check_product_dtype(std::string_view op, Dtype d) {
  TALLY_CHECK_TYPE_ERROR(d != kBool && !is_float8(d), op, ": \"addmm\" not implemented for '", dtype_name(d), "'",
                         is_float8(d) ? ": use scaled_mm for float8 operands" : "");
}

struct Matmul {
  static constexpr std::string_view name = "matmul";
  static constexpr bool supports_cuda = true;
  static constexpr bool exact_out_dtype = true;  // as PyTorch's products (Note [Forms])
  static ops::OutputSpec meta(const Tensor& a, const Tensor& b) {
    TALLY_CHECK_TYPE_ERROR(a.dtype() == b.dtype(), "expected m1 and m2 to have the same dtype, but got: ", dtype_name(a.dtype()),
                           " != ", dtype_name(b.dtype()));
    check_product_dtype(name, a.dtype());
    const MatmulShape shape(a, b);
    // The dims that the 1-D operands did not have are dropped.
    DimVector sizes = shape.batch;
    if (a.dim() > 1) sizes.push_back(shape.n);
    if (b.dim() > 1) sizes.push_back(shape.m);
    return {std::move(sizes), a.dtype()};
  }
  static void compute(const Tensor& out, const Tensor& a, const Tensor& b) {
    const MatmulShape shape(a, b);
    const int64_t n = shape.n, k = shape.k, m = shape.m;
    const int64_t nbatch = static_cast<int64_t>(shape.batch.size());
    Tensor x = (a.dim() == 1 ? a.unsqueeze(0) : a).expand(shape.with(n, k));
    Tensor y = (b.dim() == 1 ? b.unsqueeze(1) : b).expand(shape.with(k, m));
    auto xs = merged_batch_stride(x, nbatch);
    if (!xs) { x = packed(x); xs = n * k; }
    auto ys = merged_batch_stride(y, nbatch);
    if (!ys) { y = packed(y); ys = k * m; }
    int64_t nb = geometry::numel(shape.batch), rows = n, row_stride = x.stride(-2);
    // A batch of dense row-major x against one shared y (a layer's weight) is one product of
    // nb·n rows: one large GEMM instead of nb small ones with the same right-hand side. (cuBLASLt
    // is given the strided batch as it is.)
    if (nb > 1 && !out.is_cuda() && *ys == 0 && x.stride(-1) == 1 && *xs == n * k && (n == 1 || x.stride(-2) == k)) {
      rows = nb * n;
      row_stride = k;
      nb = 1;
      xs = 0;
    }
    Tensor full = out.view(shape.with(n, m));
    if (out.is_cuda()) {
      const kernels::cuda::Matrix ma = cuda_operand(x, *xs, n, k), mb = cuda_operand(y, *ys, k, m);
      kernels::cuda::matmul(static_cast<uint8_t>(a.dtype()), static_cast<uint8_t>(out.dtype()), nb, n, m, k, ma, mb,
                            full.data_ptr(), nullptr, nullptr, cuda::allow_tf32());
    } else {
      kernels::matmul(a.dtype(), nb, rows, m, k, {x.data_ptr(), *xs, row_stride, x.stride(-1)},
                      {y.data_ptr(), *ys, y.stride(-2), y.stride(-1)}, full.data_ptr());
    }
  }
  static ops::Cost cost(const Tensor& out, const Tensor& a, const Tensor& b) {
    const int64_t k = a.size(-1);
    return {2 * out.numel() * k, ops::bytes_held(a) + ops::bytes_held(b), out.nbytes()};  // Note [Bytes read]
  }
  // C = A·B: dA = dC·Bᵀ, dB = Aᵀ·dC — two matmuls, so backward costs twice the forward's FLOPs
  // (the lecture's 2 : 4 rule); each is skipped when its input needs no gradient.
  // ∂a = g·bᵀ reads b, ∂b = aᵀ·g reads a; the product itself is not read.
  static ops::SavedTensors saved(const SmallVector<bool, 4>& needs) { return {{needs[1], needs[0]}, false}; }
  static TensorList backward(const ops::BackwardContext& c, const Tensor& a, const Tensor& b) {
    Tensor a2 = a.dim() == 1 ? a.unsqueeze(0) : a;
    Tensor b2 = b.dim() == 1 ? b.unsqueeze(1) : b;
    DimVector out_sizes = DimVector(c.grad.sizes());  // the product's shape with the vector dims restored
    if (a.dim() == 1) out_sizes.insert(out_sizes.end() - (b.dim() == 1 ? 0 : 1), 1);
    if (b.dim() == 1) out_sizes.push_back(1);
    Tensor g = c.grad.reshape(out_sizes);
    TensorList grads(2);
    if (c.needs_grad(0)) grads[0] = sum_to_size(matmul(g, b2.transpose(-1, -2)), a2.sizes()).reshape(a.sizes());
    if (c.needs_grad(1)) {
      if (b2.dim() == 2) {
        grads[1] = shared_matrix_grad(a2, g, b2).reshape(b.sizes());
      } else {
        grads[1] = sum_to_size(matmul(a2.transpose(-1, -2), g), b2.sizes()).reshape(b.sizes());
      }
    }
    return grads;
  }
};

/// beta·self + alpha·(mat1 · mat2) (torch.addmm), mat1 n×k and mat2 k×m, self broadcast to n×m:
/// with beta = alpha = 1 a linear layer's product with its bias. On the CPU a bias row (self of m
/// elements, or a row broadcast over n) with both scales 1 is added in the product's epilogue,
/// before the result is rounded to its dtype, so the n×m result is written once; otherwise the
/// product is scaled and self added after. beta = 0 ignores self, its NaNs included, as
/// PyTorch's, and gives it a gradient of zeros. Integer products take the scales' integer parts.
struct Addmm {
  static constexpr std::string_view name = "addmm";
  static constexpr bool supports_cuda = true;
  static constexpr bool exact_out_dtype = true;  // as PyTorch's products (Note [Forms])
  static bool is(Scalar s, double v) { return s.to_double() == v; }
  /// A scale in the product's dtype: an integer product multiplies by an integer.
  static Scalar scale_for(Scalar s, Dtype dtype) { return is_integral(dtype) ? Scalar(s.to_long()) : s; }
  static ops::OutputSpec meta(const Tensor& self, const Tensor& mat1, const Tensor& mat2, Scalar, Scalar) {
    TALLY_CHECK(mat1.dim() == 2 && mat2.dim() == 2, "addmm: mat1 and mat2 must be matrices, got ", mat1.dim(), "-D and ", mat2.dim(),
                "-D tensors");
    const MatmulShape shape(mat1, mat2);  // its message for matrices that do not fit
    TALLY_CHECK_TYPE_ERROR(mat1.dtype() == mat2.dtype() && self.dtype() == mat1.dtype(),
                           "addmm: expected self, mat1 and mat2 to have the same dtype, but got: ", dtype_name(self.dtype()), ", ",
                           dtype_name(mat1.dtype()), " and ", dtype_name(mat2.dtype()));
    check_product_dtype(name, mat1.dtype());
    const DimVector sizes{shape.n, shape.m};
    TALLY_CHECK(self.dim() <= 2 && geometry::broadcast_shapes(self.sizes(), sizes) == IntArrayRef(sizes), "addmm: self of shape ",
                self.sizes(), " does not broadcast to the product's shape ", IntArrayRef(sizes));
    return {sizes, mat1.dtype()};
  }
  static void compute(const Tensor& out, const Tensor& self, const Tensor& mat1, const Tensor& mat2, Scalar beta, Scalar alpha) {
    if (out.numel() == 0) return;
    const int64_t n = mat1.size(0), k = mat1.size(1), m = mat2.size(1);
    const Tensor bias = self.expand({n, m});
    // A row broadcast over the rows, its elements contiguous: the epilogue's bias.
    const bool bias_row = (n == 1 || bias.stride(0) == 0) && (m == 1 || bias.stride(1) == 1);
    if (!out.is_cuda() && bias_row && is(beta, 1) && is(alpha, 1)) {
      kernels::matmul(out.dtype(), 1, n, m, k, {mat1.data_ptr(), 0, mat1.stride(0), mat1.stride(1)},
                      {mat2.data_ptr(), 0, mat2.stride(0), mat2.stride(1)}, out.data_ptr(), bias.data_ptr());
      return;
    }
    Tensor(out).copy_(matmul(mat1, mat2));
    if (!is(alpha, 1)) Tensor(out).mul_(scale_for(alpha, out.dtype()));
    if (!is(beta, 0)) Tensor(out).add_(bias, scale_for(beta, out.dtype()));
  }
  // The product, then a multiply per output element for alpha and an add (and a multiply for
  // beta) per element for self; self is read only when beta is not 0.
  static ops::Cost cost(const Tensor& out, const Tensor& self, const Tensor& mat1, const Tensor& mat2, Scalar beta, Scalar alpha) {
    const int64_t scales = (is(alpha, 1) ? 0 : 1) + (is(beta, 0) ? 0 : is(beta, 1) ? 1 : 2);
    return {2 * out.numel() * mat1.size(1) + scales * out.numel(),
            (is(beta, 0) ? 0 : ops::bytes_held(self)) + ops::bytes_held(mat1) + ops::bytes_held(mat2), out.nbytes()};
  }
  // d self = beta·g summed to self's shape; mat1 and mat2 as matmul's, times alpha.
  static ops::SavedTensors saved(const SmallVector<bool, 4>& needs) { return {{false, needs[2], needs[1]}, false}; }
  static TensorList backward(const ops::BackwardContext& c, const Tensor& self, const Tensor& mat1, const Tensor& mat2, Scalar beta,
                             Scalar alpha) {
    const Tensor g = is(alpha, 1) ? c.grad : c.grad * alpha;
    TensorList grads(3);
    if (c.needs_grad(0)) {
      grads[0] = is(beta, 0) ? zeros(self.sizes(), c.grad.options()) : is(beta, 1) ? sum_to_size(c.grad, self.sizes())
                                                                                : sum_to_size(c.grad, self.sizes()) * beta;
    }
    if (c.needs_grad(1)) grads[1] = matmul(g, mat2.t());
    if (c.needs_grad(2)) grads[2] = shared_matrix_grad(mat1, g, mat2);
    return grads;
  }
};

struct ScaledMm {
  static constexpr std::string_view name = "_scaled_mm";
  static constexpr bool supports_cuda = true;
  // The CPU's product is made of other ops and holds their temporaries: a meta run counts them.
  static constexpr bool compute_on_meta = true;
  static ops::OutputSpec meta(const Tensor& a, const Tensor& b, const Tensor& scale_a, const Tensor& scale_b, Dtype out_dtype) {
    TALLY_CHECK(a.dim() == 2 && b.dim() == 2, "_scaled_mm: expected 2-D operands, got ", a.sizes(), " and ", b.sizes());
    TALLY_CHECK_TYPE_ERROR(is_float8(a.dtype()) && is_float8(b.dtype()), "_scaled_mm: expected float8 operands, got ",
                           dtype_name(a.dtype()), " and ", dtype_name(b.dtype()));
    TALLY_CHECK(a.size(1) == b.size(0), "_scaled_mm: mat1 and mat2 shapes cannot be multiplied (", a.size(0), "x",
                a.size(1), " and ", b.size(0), "x", b.size(1), ")");
    for (const Tensor* s : {&scale_a, &scale_b}) {
      TALLY_CHECK(s->numel() == 1 && s->dtype() == kFloat32, "_scaled_mm: scales must be float32 tensors of one element, got ",
                  dtype_name(s->dtype()), " of shape ", s->sizes());
    }
    TALLY_CHECK_TYPE_ERROR(out_dtype == kBFloat16 || out_dtype == kFloat16 || out_dtype == kFloat32,
                           "_scaled_mm: out_dtype must be bfloat16, float16 or float32, got ", dtype_name(out_dtype));
    return {{a.size(0), b.size(1)}, out_dtype};
  }
  static void compute(const Tensor& out, const Tensor& a, const Tensor& b, const Tensor& scale_a, const Tensor& scale_b, Dtype out_dtype) {
    const int64_t m = a.size(0), k = a.size(1), n = b.size(1);
    if (!out.is_cuda()) {
      // Every E4M3 and E5M2 value is a bfloat16, so the operands widen exactly. A bfloat16 result
      // runs on the CPU's fastest bfloat16 path (AMX, AVX512_BF16, or float32 widening; tally info
      // says which), rounded to bfloat16 before the scales apply (their product in float32, as a
      // number would be). A float32 or float16 result is accumulated and scaled in float32, as
      // cuBLASLt's is: a bfloat16 product would cost it half its digits. Ops throughout, no item():
      // this runs on meta tensors as well.
      const Dtype wide = out_dtype == kBFloat16 ? kBFloat16 : kFloat32;
      Tensor(out).copy_(matmul(a.to(wide), b.to(wide)).to(kFloat32) * (scale_a * scale_b).reshape({}));
      return;
    }
    Tensor x = a.stride(1) == 1 ? a : a.contiguous();
    Tensor y = b.stride(0) == 1 ? b : column_major(b);
    int64_t xs = 0, ys = 0;
    const kernels::cuda::Matrix ma = cuda_operand(x, xs, m, k), mb = cuda_operand(y, ys, k, n);
    Tensor sa = scale_a.to(out.device()).contiguous(), sb = scale_b.to(out.device()).contiguous();
    kernels::cuda::matmul(static_cast<uint8_t>(a.dtype()), static_cast<uint8_t>(out_dtype), 1, m, n, k, ma, mb, out.data_ptr(),
                          static_cast<const float*>(sa.data_ptr()), static_cast<const float*>(sb.data_ptr()), false);
  }
  static ops::Cost cost(const Tensor& out, const Tensor& a, const Tensor& b, const Tensor&, const Tensor&, Dtype) {
    return {2 * out.numel() * a.size(1), ops::bytes_held(a) + ops::bytes_held(b), out.nbytes()};
  }
};

}  // namespace

Tensor matmul(const Tensor& a, const Tensor& b) { return ops::apply<Matmul>(a, b); }
Tensor& matmul_out(Tensor& out, const Tensor& a, const Tensor& b) { return ops::apply_out<Matmul>(out, a, b); }

Tensor addmm(const Tensor& self, const Tensor& mat1, const Tensor& mat2, Scalar beta, Scalar alpha) {
  return ops::apply<Addmm>(self, mat1, mat2, beta, alpha);
}

Tensor scaled_mm(const Tensor& a, const Tensor& b, const Tensor& scale_a, const Tensor& scale_b, Dtype out_dtype) {
  return ops::apply<ScaledMm>(a, b, scale_a, scale_b, out_dtype);
}

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
