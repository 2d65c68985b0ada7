#include "tally/ops/norm.h"

#include <cmath>

#include "tally/ops/creation.h"
#include "tally/ops/elementwise.h"
#include "tally/ops/reduce.h"
#include "tally/ops/zero_at_zero.h"

namespace tally::linalg {

namespace {

/// The number of elements each output element reduces: all of x's, or those of `dims`.
int64_t reduced_count(const Tensor& x, IntArrayRef dims) {
  if (dims.empty()) return x.numel();
  int64_t n = 1;
  for (int64_t d : dims) n *= x.dim() == 0 ? 1 : x.size(maybe_wrap_dim(d, x.dim()));
  return n;
}

}  // namespace

Tensor vector_norm(const Tensor& x, double ord, IntArrayRef dims, bool keepdim) {
  TALLY_CHECK_TYPE_ERROR(x.is_floating_point() && !is_float8(x.dtype()),
                         "linalg.vector_norm: Expected a floating point or complex tensor as input. Got ", dtype_name(x.dtype()));
  TALLY_CHECK(!std::isnan(ord), "linalg.vector_norm: the order must be a number, got nan");
  if (std::isinf(ord))
    TALLY_CHECK(reduced_count(x, dims) > 0,
                "linalg.vector_norm cannot compute the ", ord > 0 ? "inf" : "-inf", " norm on an empty tensor because the operation ",
                "does not have an identity (input of shape ", x.sizes(), ")");
  // float16 and bfloat16 accumulate in float32, as PyTorch's reductions do, and round once.
  const Tensor a = abs(x.to(promote_types(x.dtype(), kFloat32)));
  Tensor norm;
  if (ord == 2) {
    norm = ops::zero_at_zero(sum(square(a), dims, keepdim), [](const Tensor& s) { return sqrt(s); });
  } else if (ord == 1) {
    norm = sum(a, dims, keepdim);
  } else if (ord == 0) {
    norm = sum(ne(a, zeros({}, a.options())).to(a.dtype()), dims, keepdim);
    // A count has no gradient, but torch's result has a grad_fn whose gradient is 0: a zeroed
    // copy of x joins it (masked_fill passes no gradient where it fills, and makes no NaN).
    if (a.requires_grad()) norm = norm + sum(a.masked_fill(scalar_tensor(true, TensorOptions(kBool)), 0.0), dims, keepdim);
  } else if (std::isinf(ord)) {
    norm = ord > 0 ? amax(a, dims, keepdim) : amin(a, dims, keepdim);
  } else {
    // |x|^ord of a zero element has no gradient (PyTorch masks it: for ord < 1 the rule's |x|^(ord−1) is ∞).
    const Tensor nonzero = ne(a, zeros({}, a.options()));
    const Tensor powered = where(nonzero, pow(where(nonzero, a, ones({}, a.options())), ord), pow(a, ord).detach());
    const Tensor s = sum(powered, dims, keepdim);
    norm = ord > 0 ? ops::zero_at_zero(s, [ord](const Tensor& t) { return pow(t, 1.0 / ord); }) : pow(s, 1.0 / ord);
  }
  return norm.to(x.dtype());
}

}  // namespace tally::linalg

namespace tally {
Tensor Tensor::norm(double p, IntArrayRef dims, bool keepdim) const { return linalg::vector_norm(*this, p, dims, keepdim); }
}  // namespace tally
