// The optimizers' pointwise ops: addcmul, addcdiv and lerp, one pass over three operands with a
// number (torch.addcmul(self, t1, t2, value=v) = self + v·t1·t2). Each op is a definition (name,
// FLOPs per element, scalar function, gradients); Pointwise<Def> turns it into an op with its
// functional, in-place and out= forms.

#include <cmath>

#include "tally/kernels/cpu/dispatch.h"
#include "tally/ops/cuda_launch.h"
#include "tally/ops/elementwise.h"
#include "tally/ops/elementwise_common.h"
#include "tally/ops/reduce.h"

namespace tally {

namespace {

struct AddcmulDef {
  static constexpr std::string_view name = "addcmul";
  static constexpr auto cuda_op = kernels::cuda::PointwiseOp::Addcmul;
  static constexpr int64_t flops = 3;  // t1·t2, ·v, +self
  template <class C> static C f(C self, C t1, C t2, C v) { return self + v * t1 * t2; }
  static Tensor grad_t1(const Tensor& g, const Tensor&, const Tensor& t2, Scalar v) { return g * t2 * v; }
  static Tensor grad_t2(const Tensor& g, const Tensor& t1, const Tensor&, Scalar v) { return g * t1 * v; }
  /// self is never read; t1 only for t2's gradient, t2 only for t1's.
  static ops::SavedTensors saved(const SmallVector<bool, 4>& needs) { return {{false, needs[2], needs[1]}, false}; }
};
struct AddcdivDef {
  static constexpr std::string_view name = "addcdiv";
  static constexpr auto cuda_op = kernels::cuda::PointwiseOp::Addcdiv;
  static constexpr int64_t flops = 3;  // t1/t2, ·v, +self
  template <class C> static C f(C self, C t1, C t2, C v) { return self + v * (t1 / t2); }
  // PyTorch refuses integer tensor1 and tensor2 (bool counts) whatever self is: their quotient
  // would once have been an integer division.
  static void check(Dtype t1, Dtype t2) {
    auto integral = [](Dtype d) { return is_integral(d) || d == kBool; };
    TALLY_CHECK_TYPE_ERROR(!integral(t1) || !integral(t2), "Integer division with addcdiv is no longer supported, and in a future "
                           "release addcdiv will perform a true division of tensor1 and tensor2. Use a floating dtype.");
  }
  static Tensor grad_t1(const Tensor& g, const Tensor&, const Tensor& t2, Scalar v) { return g * v / t2; }
  // d(t1/t2)/dt2 = -t1/t2²
  static Tensor grad_t2(const Tensor& g, const Tensor& t1, const Tensor& t2, Scalar v) { return -(g * v * t1 / (t2 * t2)); }
  /// self is never read; t1 only for t2's gradient, t2 for either.
  static ops::SavedTensors saved(const SmallVector<bool, 4>& needs) { return {{false, needs[2], needs[1] || needs[2]}, false}; }
};

template <class Def>
struct Pointwise {
  static constexpr std::string_view name = Def::name;
  static constexpr bool elementwise = true;
  static constexpr bool supports_cuda = true;
  static ops::OutputSpec meta(const Tensor& self, const Tensor& t1, const Tensor& t2, Scalar value) {
    const Dtype dt = result_type({&self, &t1, &t2});
    check_arith(dt, Def::name);
    TALLY_CHECK_TYPE_ERROR(dt != kBool, "\"", Def::name, "_cpu_out\" not implemented for 'Bool'");
    if constexpr (requires { Def::check(t1.dtype(), t2.dtype()); }) Def::check(t1.dtype(), t2.dtype());
    check_scalar_fits(value, dt, Def::name);
    return {geometry::broadcast_shapes(geometry::broadcast_shapes(self.sizes(), t1.sizes()), t2.sizes()), dt};
  }
  static void compute(const Tensor& out, const Tensor& self, const Tensor& t1, const Tensor& t2, Scalar value) {
    if (out.numel() == 0) return;
    const Dtype dt = out.dtype();
    Tensor a = self.to(dt), b = t1.to(dt), c = t2.to(dt);
    if (out.is_cuda()) return kernels::cuda::pointwise(Def::cuda_op, ops::cuda_launch<4>(out, {&a, &b, &c}), value.to_double());
    cpu_kernels().run<&Pointwise::kernel>(ops::make_loop<4>(out, {&a, &b, &c}), dt, value);
  }
  /// The CPU loop, built once per target (Note [CPU kernel dispatch]).
  static void kernel(const kernels::StridedLoop<4>& loop, Dtype dt, Scalar value) {
    dispatch(dt, Def::name, [&]<class T>() {
      using C = compute_t<T>;
      const C v = value.to<C>();
      kernels::ternary_kernel<T, T, T, T>(loop, [v](T x, T y, T z) {
        return cast_to<T>(Def::template f<C>(static_cast<C>(x), static_cast<C>(y), static_cast<C>(z), v));
      });
    });
  }
  static ops::Cost cost(const Tensor& out, const Tensor& self, const Tensor& t1, const Tensor& t2, Scalar) {
    return ops::elementwise_cost(out, {&self, &t1, &t2}, Def::flops);
  }
  static ops::SavedTensors saved(const SmallVector<bool, 4>& needs) { return Def::saved(needs); }
  static TensorList backward(const ops::BackwardContext& c, const Tensor& self, const Tensor& t1, const Tensor& t2, Scalar v) {
    TensorList grads(3);
    if (c.needs_grad(0)) grads[0] = sum_to_size(c.grad, self.sizes()).to(self.dtype());
    if (c.needs_grad(1)) grads[1] = sum_to_size(Def::grad_t1(c.grad, t1, t2, v), t1.sizes()).to(t1.dtype());
    if (c.needs_grad(2)) grads[2] = sum_to_size(Def::grad_t2(c.grad, t1, t2, v), t2.sizes()).to(t2.dtype());
    return grads;
  }
};

/// self + weight·(end − self), PyTorch's form: for |weight| ≥ 0.5 it is computed from end's side,
/// end − (end − self)·(1 − weight), so that weight 1 gives end exactly.
struct Lerp {
  static constexpr std::string_view name = "lerp";
  static constexpr bool elementwise = true;
  static constexpr bool supports_cuda = true;
  static ops::OutputSpec meta(const Tensor& self, const Tensor& end, Scalar) {
    TALLY_CHECK_TYPE_ERROR(self.dtype() == end.dtype(), "expected dtype ", dtype_name(self.dtype()), " for `end` but got dtype ",
                           dtype_name(end.dtype()));
    TALLY_CHECK_TYPE_ERROR(is_floating_point(self.dtype()), "\"lerp_kernel_scalar\" not implemented for '",
                           dtype_name(self.dtype()), "'");
    check_arith(self.dtype(), "lerp");
    return {geometry::broadcast_shapes(self.sizes(), end.sizes()), self.dtype()};
  }
  static void compute(const Tensor& out, const Tensor& self, const Tensor& end, Scalar weight) {
    if (out.numel() == 0) return;
    if (out.is_cuda()) return kernels::cuda::lerp(ops::cuda_launch<3>(out, {&self, &end}), weight.to_double());
    cpu_kernels().run<&Lerp::kernel>(ops::make_loop<3>(out, {&self, &end}), out.dtype(), weight);
  }
  static void kernel(const kernels::StridedLoop<3>& loop, Dtype dt, Scalar weight) {
    dispatch(dt, "lerp", [&]<class T>() {
      using C = compute_t<T>;
      const C w = weight.to<C>();
      kernels::binary_kernel<T, T>(loop, [w](C a, C b) {
        return std::abs(w) < C(0.5) ? a + w * (b - a) : b - (b - a) * (C(1) - w);
      });
    });
  }
  static ops::Cost cost(const Tensor& out, const Tensor& self, const Tensor& end, Scalar) {
    return ops::elementwise_cost(out, {&self, &end}, 3);  // b−a, ·w, +a
  }
  static constexpr bool backward_reads_values = false;  // the gradients are the weight's multiples of g
  static TensorList backward(const ops::BackwardContext& c, const Tensor& self, const Tensor& end, Scalar weight) {
    const double w = weight.to_double();
    TensorList grads(2);
    if (c.needs_grad(0)) grads[0] = sum_to_size(c.grad * (1.0 - w), self.sizes());
    if (c.needs_grad(1)) grads[1] = sum_to_size(c.grad * w, end.sizes());
    return grads;
  }
};

using Addcmul = Pointwise<AddcmulDef>;
using Addcdiv = Pointwise<AddcdivDef>;

}  // namespace

#if TALLY_PRIMARY_PASS
Tensor addcmul(const Tensor& self, const Tensor& t1, const Tensor& t2, Scalar value) { return ops::apply<Addcmul>(self, t1, t2, value); }
Tensor addcdiv(const Tensor& self, const Tensor& t1, const Tensor& t2, Scalar value) { return ops::apply<Addcdiv>(self, t1, t2, value); }
Tensor lerp(const Tensor& self, const Tensor& end, Scalar weight) { return ops::apply<Lerp>(self, end, weight); }
Tensor& addcmul_out(Tensor& out, const Tensor& self, const Tensor& t1, const Tensor& t2, Scalar value) {
  return ops::apply_out<Addcmul>(out, self, t1, t2, value);
}
Tensor& addcdiv_out(Tensor& out, const Tensor& self, const Tensor& t1, const Tensor& t2, Scalar value) {
  return ops::apply_out<Addcdiv>(out, self, t1, t2, value);
}
Tensor& lerp_out(Tensor& out, const Tensor& self, const Tensor& end, Scalar weight) { return ops::apply_out<Lerp>(out, self, end, weight); }

Tensor Tensor::addcmul(const Tensor& t1, const Tensor& t2, Scalar value) const { return tally::addcmul(*this, t1, t2, value); }
Tensor Tensor::addcdiv(const Tensor& t1, const Tensor& t2, Scalar value) const { return tally::addcdiv(*this, t1, t2, value); }
Tensor Tensor::lerp(const Tensor& end, Scalar weight) const { return tally::lerp(*this, end, weight); }
Tensor& Tensor::addcmul_(const Tensor& t1, const Tensor& t2, Scalar value) const { return ops::apply_inplace<Addcmul>(*this, t1, t2, value); }
Tensor& Tensor::addcdiv_(const Tensor& t1, const Tensor& t2, Scalar value) const { return ops::apply_inplace<Addcdiv>(*this, t1, t2, value); }
Tensor& Tensor::lerp_(const Tensor& end, Scalar weight) const { return ops::apply_inplace<Lerp>(*this, end, weight); }

#endif  // TALLY_PRIMARY_PASS

}  // namespace tally

TALLY_CPU_KERNELS(pointwise, &Addcmul::kernel, &Addcdiv::kernel, &Lerp::kernel)
