// Binary elementwise ops. The ops are the rows of tally/table/binary_ops.h, and add and sub; each
// has a definition here (FLOPs per element, checks, gradients) over its scalar rule `<Name>Math`
// (kernels/binary_math.h: result-dtype rule and function, shared with the CUDA kernels);
// Binary<Def> turns it into an op run by apply(), and the row gives it every form.

#include <cmath>

#include "tally/kernels/binary_math.h"
#include "tally/kernels/cpu/dispatch.h"
#include "tally/ops/cuda_launch.h"
#include "tally/ops/elementwise.h"
#include "tally/ops/elementwise_common.h"
#include "tally/ops/reduce.h"
#include "tally/ops/registry.h"

namespace tally {

namespace {

std::optional<Dtype> combine_categories(std::optional<Dtype> higher, std::optional<Dtype> lower) {
  if (!higher) return lower;
  if (!lower) return higher;
  if (is_floating_point(*higher)) return higher;
  if (*higher == kBool || is_floating_point(*lower)) return promote_types(*higher, *lower);
  return higher;
}

std::optional<Dtype> promote_opt(std::optional<Dtype> acc, Dtype d) { return acc ? promote_types(*acc, d) : d; }

}  // namespace

#if TALLY_PRIMARY_PASS
Dtype result_type(const Tensor& a, const Tensor& b) { return result_type({&a, &b}); }

Dtype result_type(std::initializer_list<const Tensor*> tensors) {
  std::optional<Dtype> dim_result, zero_result;
  for (const Tensor* t : tensors) {
    if (t->dim() > 0) dim_result = promote_opt(dim_result, t->dtype());
    else zero_result = promote_opt(zero_result, t->dtype());
  }
  return *combine_categories(dim_result, zero_result);
}

Dtype result_type(Dtype a, Scalar b) {
  // A number joins as the default dtype of its kind, and only lifts the category.
  return *combine_categories(a, b.natural_dtype());
}
Dtype result_type(const Tensor& a, Scalar b) { return result_type(a.dtype(), b); }
#endif  // TALLY_PRIMARY_PASS

namespace {

using kernels::BinaryRule;

constexpr const char* kBoolSubtractionMessage =
    "Subtraction, the `-` operator, with a bool tensor is not supported. If you are trying to invert a mask, use the "
    "`~` or `logical_not()` operator instead.";

/// What one gradient rule of a binary op reads (Note [Saved tensors] in ops/apply.h).
struct Reads {
  bool a = false, b = false, out = false;
};

struct AddDef : kernels::AddMath {
  static constexpr int64_t flops = 1;
  // d(a+b) = da + db: no operand value is read (Note [Version counter])
  static constexpr bool backward_reads_values = false;
  static constexpr Reads reads_a{}, reads_b{};
  static Tensor grad_a(const Tensor& g, const Tensor&, const Tensor&, const Tensor&) { return g; }
  static Tensor grad_b(const Tensor& g, const Tensor&, const Tensor&, const Tensor&) { return g; }
};
struct SubDef : kernels::SubMath {
  static constexpr int64_t flops = 1;
  static void check(const Tensor& a, const Tensor& b, Dtype) {
    TALLY_CHECK_TYPE_ERROR(a.dtype() != kBool || b.dtype() != kBool, "Subtraction, the `-` operator, with two bool tensors is not "
                           "supported. Use the `^` or `logical_xor()` operator instead.");
    TALLY_CHECK_TYPE_ERROR(a.dtype() != kBool && b.dtype() != kBool, kBoolSubtractionMessage);
  }
  static constexpr bool backward_reads_values = false;
  static constexpr Reads reads_a{}, reads_b{};
  static Tensor grad_a(const Tensor& g, const Tensor&, const Tensor&, const Tensor&) { return g; }
  static Tensor grad_b(const Tensor& g, const Tensor&, const Tensor&, const Tensor&) { return -g; }
};
struct MulDef : kernels::MulMath {
  static constexpr int64_t flops = 1;
  static constexpr Reads reads_a{.b = true}, reads_b{.a = true};
  static Tensor grad_a(const Tensor& g, const Tensor&, const Tensor& b, const Tensor&) { return g * b; }
  static Tensor grad_b(const Tensor& g, const Tensor& a, const Tensor&, const Tensor&) { return g * a; }
};
struct DivDef : kernels::DivMath {
  static constexpr int64_t flops = 1;
  static constexpr Reads reads_a{.b = true}, reads_b{.b = true, .out = true};
  static Tensor grad_a(const Tensor& g, const Tensor&, const Tensor& b, const Tensor&) { return g / b; }
  // d(a/b)/db = -a/b² = -out/b
  static Tensor grad_b(const Tensor& g, const Tensor&, const Tensor& b, const Tensor& out) { return -(g * out / b); }
};
struct PowDef : kernels::PowMath {
  static constexpr int64_t flops = 1;
  static void check(const Tensor&, const Tensor&, Dtype common) {
    TALLY_CHECK_TYPE_ERROR(common != kBool, "\"pow\" not implemented for 'Bool'");
  }
  // d(a^b)/da = b·a^(b-1), taken as 0 where b = 0 (a^0 is constant, though 0·0^-1 is NaN);
  // d(a^b)/db = a^b·ln a, taken as 0 where a = 0 and b ≥ 0 (0^b is constant there, though
  // 0·ln 0 is NaN). PyTorch's pow_backward_self and pow_backward_exponent.
  static Tensor grad_a(const Tensor& g, const Tensor& a, const Tensor& b, const Tensor&) {
    return (g * b * pow(a, b - 1)).masked_fill(b == 0, 0);
  }
  static Tensor grad_b(const Tensor& g, const Tensor& a, const Tensor& b, const Tensor& out) {
    const Tensor exponent_nonnegative = b >= 0;
    const Tensor constant_at_zero = where(a == 0, exponent_nonnegative, zeros_like(exponent_nonnegative));
    return (g * out * log(a)).masked_fill(constant_at_zero, 0);
  }
};
struct MaximumDef : kernels::MaximumMath {
  static constexpr int64_t flops = 1;
  // The larger input takes the gradient; a tie splits it evenly (PyTorch's rule).
  static Tensor grad_a(const Tensor& g, const Tensor& a, const Tensor& b, const Tensor&) { return tie_split(g, a, b); }
  static Tensor grad_b(const Tensor& g, const Tensor& a, const Tensor& b, const Tensor&) { return tie_split(g, b, a); }
  static Tensor tie_split(const Tensor& g, const Tensor& self, const Tensor& other) {
    return where(self == other, g / 2, g).masked_fill(self < other, 0);
  }
};
struct MinimumDef : kernels::MinimumMath {
  static constexpr int64_t flops = 1;
  static Tensor grad_a(const Tensor& g, const Tensor& a, const Tensor& b, const Tensor&) { return tie_split(g, a, b); }
  static Tensor grad_b(const Tensor& g, const Tensor& a, const Tensor& b, const Tensor&) { return tie_split(g, b, a); }
  static Tensor tie_split(const Tensor& g, const Tensor& self, const Tensor& other) {
    return where(self == other, g / 2, g).masked_fill(self > other, 0);
  }
};

struct EqDef : kernels::EqMath { static constexpr int64_t flops = 1; };
struct NeDef : kernels::NeMath { static constexpr int64_t flops = 1; };
struct LtDef : kernels::LtMath { static constexpr int64_t flops = 1; };
struct LeDef : kernels::LeMath { static constexpr int64_t flops = 1; };
struct GtDef : kernels::GtMath { static constexpr int64_t flops = 1; };
struct GeDef : kernels::GeMath { static constexpr int64_t flops = 1; };

/// Each definition's name and CUDA kernel: its table row's, or add's and sub's own.
template <class Def> struct Row;
#define TALLY_BINARY_ROW_(fn, Name, what) TALLY_ELEMENTWISE_ROW(Name##Def, #fn, kernels::cuda::BinaryOp::Name)
TALLY_FORALL_BINARY_OPS(TALLY_BINARY_ROW_)
#undef TALLY_BINARY_ROW_
TALLY_ELEMENTWISE_ROW(AddDef, "add", kernels::cuda::BinaryOp::Add)
TALLY_ELEMENTWISE_ROW(SubDef, "sub", kernels::cuda::BinaryOp::Sub)

/// The dtype computation happens in, for operands promoted to `common`.
template <class Def>
Dtype compute_dtype(Dtype common) {
  if constexpr (Def::rule == BinaryRule::PromoteToFloat) return is_floating_point(common) ? common : get_default_dtype();
  return common;
}

template <class Def>
struct Binary {
  static constexpr std::string_view name = Row<Def>::name;
  static constexpr bool backward_reads_values = ops::detail::backward_reads_values<Def>();
  static constexpr bool supports_cuda = true;
  static constexpr bool elementwise = true;
  static ops::OutputSpec meta(const Tensor& a, const Tensor& b) {
    const Dtype common = result_type(a, b);
    check_arith(common, name);  // before any device's kernel is chosen
    if constexpr (requires { Def::check(a, b, common); }) Def::check(a, b, common);
    return {geometry::broadcast_shapes(a.sizes(), b.sizes()), Def::rule == BinaryRule::Compare ? kBool : compute_dtype<Def>(common)};
  }
  static void compute(const Tensor& out, const Tensor& a, const Tensor& b) {
    const Dtype common = result_type(a, b);
    const Dtype dt = compute_dtype<Def>(common);
    run(out, a.to(dt), b.to(dt));
  }
  /// Def on same-dtype operands into `out` (already of the broadcast shape, of the operands'
  /// dtype, or bool for comparisons).
  static void run(const Tensor& out, const Tensor& a, const Tensor& b) {
    if (out.numel() == 0) return;
    if (out.is_cuda()) return kernels::cuda::binary(Row<Def>::cuda_op, ops::cuda_launch<3>(out, {&a, &b}));
    cpu_kernels().run<&Binary::kernel>(ops::make_loop<3>(out, {&a, &b}), a.dtype());
  }
  /// The CPU loop, built once per target (Note [CPU kernel dispatch]).
  static void kernel(const kernels::StridedLoop<3>& loop, Dtype dt) {
    dispatch(dt, name, [&]<class T>() {
      using C = compute_t<T>;
      using TO = std::conditional_t<Def::rule == BinaryRule::Compare, bool, T>;
      kernels::binary_kernel<TO, T>(loop, [](C x, C y) { return Def::template f<C>(x, y); });
    });
  }
  static ops::Cost cost(const Tensor& out, const Tensor& a, const Tensor& b) {
    return ops::elementwise_cost(out, {&a, &b}, Def::flops);
  }
  /// Only what the wanted gradients' rules read, where the definition says (Note [Saved tensors]).
  static ops::SavedTensors saved(const SmallVector<bool, 4>& needs)
    requires requires { Def::reads_a; }
  {
    const Reads ra = needs[0] ? Def::reads_a : Reads{}, rb = needs[1] ? Def::reads_b : Reads{};
    return {{ra.a || rb.a, ra.b || rb.b}, ra.out || rb.out};
  }
  static TensorList backward(const ops::BackwardContext& c, const Tensor& a, const Tensor& b)
    requires requires { &Def::grad_a; }
  {
    TensorList grads(2);
    // Each gradient is reduced over the dims its input was broadcast along, in the input's dtype.
    if (c.needs_grad(0)) grads[0] = sum_to_size(Def::grad_a(c.grad, a, b, c.out), a.sizes()).to(a.dtype());
    if (c.needs_grad(1)) grads[1] = sum_to_size(Def::grad_b(c.grad, a, b, c.out), b.sizes()).to(b.dtype());
    return grads;
  }
};

/// A number as the 0-d tensor it joins the op as (PyTorch's wrapped number), in the dtype the
/// op will compute in so that its value is not wrapped around first (uint8 / -3).
Tensor wrap(Scalar s, const Tensor& like) { return wrapped_number(s, result_type(like, s), like); }
Tensor wrap_for_division(Scalar s, const Tensor& like) {
  return wrapped_number(s, compute_dtype<DivDef>(result_type(like, s)), like);
}

void check_bool_subtraction(const Tensor& t, Scalar s) {
  TALLY_CHECK_TYPE_ERROR(t.dtype() != kBool && s.kind() != Scalar::Kind::Bool, kBoolSubtractionMessage);
}

/// Calls run(operand) with the operand add/sub (Def) add: b itself for alpha 1 (no copy of the
/// handle on this hot path), else alpha · b in the dtype of the sum, as PyTorch scales `other`:
/// b is converted to that dtype first, so that a narrower b (uint8, float16) is not wrapped or
/// overflowed by the product before the promotion, and alpha must fit it. Def's own checks run
/// first, on the operands as given: scaling a bool tensor would hide sub's refusal of it.
template <class Def, class Run>
decltype(auto) with_alpha(const Tensor& a, const Tensor& b, Scalar alpha, Run run) {
  const Dtype dt = result_type(a, b);
  // PyTorch's alpha_check: a bool alpha only for a bool result, a float one only for a float result.
  TALLY_CHECK_TYPE_ERROR(alpha.kind() != Scalar::Kind::Bool || dt == kBool, "Boolean alpha only supported for Boolean results.");
  if (alpha.to_double() == 1.0) return run(b);
  if constexpr (requires { Def::check(a, b, dt); }) Def::check(a, b, dt);
  TALLY_CHECK_TYPE_ERROR(is_floating_point(dt) || !alpha.is_floating_point(),
                         "For integral input tensors, argument alpha must not be a floating point number.");
  check_scalar_fits(alpha, dt, Row<Def>::name);
  return run(mul(b.dtype() == dt ? b : b.to(dt), wrapped_number(alpha, dt, b)));
}

}  // namespace

#if TALLY_PRIMARY_PASS
// Every form of every row of the table: the function, out=, the method and in place.
#define TALLY_BINARY_FORMS_(fn, Name, what)                                                                              \
  Tensor fn(const Tensor& a, const Tensor& b) { return ops::apply<Binary<Name##Def>>(a, b); }                          \
  Tensor& fn##_out(Tensor& out, const Tensor& a, const Tensor& b) { return ops::apply_out<Binary<Name##Def>>(out, a, b); } \
  Tensor Tensor::fn(const Tensor& other) const { return tally::fn(*this, other); }                                     \
  Tensor& Tensor::fn##_(const Tensor& other) const { return ops::apply_inplace<Binary<Name##Def>>(*this, other); }
TALLY_FORALL_BINARY_OPS(TALLY_BINARY_FORMS_)
#undef TALLY_BINARY_FORMS_

const std::vector<ops::BinaryOpInfo>& ops::binary_ops() {
  static const std::vector<BinaryOpInfo> table = {
#define TALLY_BINARY_INFO_(op, Name, what)                                                                          \
  BinaryOpInfo{.name = #op, .summary = what, .fn = tally::op, .out = tally::op##_out,                              \
               .method = [](const Tensor& a, const Tensor& b) { return a.op(b); },                                 \
               .inplace = [](const Tensor& a, const Tensor& b) -> Tensor& { return a.op##_(b); }},
      TALLY_FORALL_BINARY_OPS(TALLY_BINARY_INFO_)
#undef TALLY_BINARY_INFO_
  };
  return table;
}

Tensor add(const Tensor& a, const Tensor& b, Scalar alpha) {
  return with_alpha<AddDef>(a, b, alpha, [&](const Tensor& o) { return ops::apply<Binary<AddDef>>(a, o); });
}
Tensor sub(const Tensor& a, const Tensor& b, Scalar alpha) {
  return with_alpha<SubDef>(a, b, alpha, [&](const Tensor& o) { return ops::apply<Binary<SubDef>>(a, o); });
}

Tensor operator+(const Tensor& a, const Tensor& b) { return add(a, b); }
Tensor operator-(const Tensor& a, const Tensor& b) { return sub(a, b); }
Tensor operator*(const Tensor& a, const Tensor& b) { return mul(a, b); }
Tensor operator/(const Tensor& a, const Tensor& b) { return div(a, b); }
Tensor operator+(const Tensor& a, Scalar b) { return add(a, wrap(b, a)); }
Tensor operator-(const Tensor& a, Scalar b) {
  check_bool_subtraction(a, b);
  return sub(a, wrap(b, a));
}
Tensor operator*(const Tensor& a, Scalar b) { return mul(a, wrap(b, a)); }
Tensor operator/(const Tensor& a, Scalar b) { return div(a, wrap_for_division(b, a)); }
Tensor operator+(Scalar a, const Tensor& b) { return add(wrap(a, b), b); }
Tensor operator-(Scalar a, const Tensor& b) {
  check_bool_subtraction(b, a);
  return sub(wrap(a, b), b);
}
Tensor operator*(Scalar a, const Tensor& b) { return mul(wrap(a, b), b); }
Tensor operator/(Scalar a, const Tensor& b) { return div(wrap_for_division(a, b), b); }
Tensor operator==(const Tensor& a, const Tensor& b) { return eq(a, b); }
Tensor operator!=(const Tensor& a, const Tensor& b) { return ne(a, b); }
Tensor operator<(const Tensor& a, const Tensor& b) { return lt(a, b); }
Tensor operator<=(const Tensor& a, const Tensor& b) { return le(a, b); }
Tensor operator>(const Tensor& a, const Tensor& b) { return gt(a, b); }
Tensor operator>=(const Tensor& a, const Tensor& b) { return ge(a, b); }
Tensor operator==(const Tensor& a, Scalar b) { return eq(a, wrap(b, a)); }
Tensor operator!=(const Tensor& a, Scalar b) { return ne(a, wrap(b, a)); }
Tensor operator<(const Tensor& a, Scalar b) { return lt(a, wrap(b, a)); }
Tensor operator<=(const Tensor& a, Scalar b) { return le(a, wrap(b, a)); }
Tensor operator>(const Tensor& a, Scalar b) { return gt(a, wrap(b, a)); }
Tensor operator>=(const Tensor& a, Scalar b) { return ge(a, wrap(b, a)); }

Tensor Tensor::add(const Tensor& other, Scalar alpha) const { return tally::add(*this, other, alpha); }
Tensor Tensor::sub(const Tensor& other, Scalar alpha) const { return tally::sub(*this, other, alpha); }
Tensor Tensor::add(Scalar other, Scalar alpha) const { return tally::add(*this, wrap(other, *this), alpha); }
Tensor Tensor::sub(Scalar other, Scalar alpha) const {
  check_bool_subtraction(*this, other);
  return tally::sub(*this, wrap(other, *this), alpha);
}
Tensor Tensor::mul(Scalar other) const { return *this * other; }
Tensor Tensor::div(Scalar other) const { return *this / other; }
Tensor Tensor::eq(Scalar other) const { return *this == other; }

Tensor& Tensor::add_(const Tensor& other, Scalar alpha) const {
  return with_alpha<AddDef>(*this, other, alpha, [&](const Tensor& o) -> Tensor& { return ops::apply_inplace<Binary<AddDef>>(*this, o); });
}
Tensor& Tensor::sub_(const Tensor& other, Scalar alpha) const {
  return with_alpha<SubDef>(*this, other, alpha, [&](const Tensor& o) -> Tensor& { return ops::apply_inplace<Binary<SubDef>>(*this, o); });
}

Tensor& add_out(Tensor& out, const Tensor& a, const Tensor& b, Scalar alpha) {
  return with_alpha<AddDef>(a, b, alpha, [&](const Tensor& o) -> Tensor& { return ops::apply_out<Binary<AddDef>>(out, a, o); });
}
Tensor& sub_out(Tensor& out, const Tensor& a, const Tensor& b, Scalar alpha) {
  return with_alpha<SubDef>(a, b, alpha, [&](const Tensor& o) -> Tensor& { return ops::apply_out<Binary<SubDef>>(out, a, o); });
}
Tensor& Tensor::add_(Scalar other) const { return add_(wrap(other, *this)); }
Tensor& Tensor::sub_(Scalar other) const {
  check_bool_subtraction(*this, other);
  return sub_(wrap(other, *this));
}
Tensor& Tensor::mul_(Scalar other) const { return mul_(wrap(other, *this)); }
Tensor& Tensor::div_(Scalar other) const { return div_(wrap_for_division(other, *this)); }

Tensor& operator+=(Tensor& a, const Tensor& b) { return a.add_(b); }
Tensor& operator-=(Tensor& a, const Tensor& b) { return a.sub_(b); }
Tensor& operator*=(Tensor& a, const Tensor& b) { return a.mul_(b); }
Tensor& operator/=(Tensor& a, const Tensor& b) { return a.div_(b); }
Tensor& operator+=(Tensor& a, Scalar b) { return a.add_(b); }
Tensor& operator-=(Tensor& a, Scalar b) { return a.sub_(b); }
Tensor& operator*=(Tensor& a, Scalar b) { return a.mul_(b); }
Tensor& operator/=(Tensor& a, Scalar b) { return a.div_(b); }

#endif  // TALLY_PRIMARY_PASS

}  // namespace tally

#define TALLY_BINARY_KERNEL_(fn, Name, what) , &Binary<Name##Def>::kernel
TALLY_CPU_KERNELS(binary, &Binary<AddDef>::kernel, &Binary<SubDef>::kernel TALLY_FORALL_BINARY_OPS(TALLY_BINARY_KERNEL_))
#undef TALLY_BINARY_KERNEL_
