// Unary elementwise ops. The ops are the rows of tally/table/unary_ops.h; each row's `<Name>Def`
// here says what the ledger and autograd need (FLOPs per element as arithmetic steps, its
// gradient and what that reads, its PyTorch reference, an optional AVX-512 form) on top of its
// scalar rule `<Name>Math` (kernels/unary_math.h, shared with the CUDA kernels); Unary<Def>
// turns the pair into an op run by apply(), and the row gives it every form.

#include <cmath>
#include <limits>

#include "tally/core/geometry.h"
#include "tally/kernels/cpu/dispatch.h"
#include "tally/kernels/unary_math.h"
#include "tally/ops/cuda_launch.h"
#include "tally/ops/elementwise.h"
#include "tally/ops/elementwise_common.h"
#include "tally/ops/reduce.h"
#include "tally/ops/registry.h"

namespace tally {

namespace {

using kernels::InputRule;
using kernels::normal_cdf;

/// What a unary op's gradient rule reads (Note [Saved tensors] in ops/apply.h).
struct UnaryReads {
  bool x = false, out = false;
};

/// Φ(x) in 16 lanes, for the exact GELU's vector forms.
inline kernels::Vec16f normal_cdf(kernels::Vec16f x) {
  using namespace kernels;
  return mul(splat(0.5f), add(splat(1.0f), erf(mul(x, splat(static_cast<float>(M_SQRT1_2))))));
}

struct NegDef : kernels::NegMath {
  static constexpr std::string_view reference = "torch.neg";
  static constexpr std::string_view domain = "normal";
  static constexpr int64_t flops = 1;
  static constexpr UnaryReads reads{.x = false, .out = false};
  static Tensor grad(const Tensor& g, const Tensor&, const Tensor&) { return -g; }
};
struct AbsDef : kernels::AbsMath {
  static constexpr std::string_view reference = "torch.abs";
  static constexpr std::string_view domain = "normal";
  static constexpr int64_t flops = 1;
  // d|x| = sign(x), 0 at 0 as in PyTorch
  static constexpr UnaryReads reads{.x = true, .out = false};
  static Tensor grad(const Tensor& g, const Tensor& x, const Tensor&) { return g * ((x > 0).to(g.dtype()) - (x < 0).to(g.dtype())); }
};
struct SqrtDef : kernels::SqrtMath {
  static constexpr std::string_view reference = "torch.sqrt";
  static constexpr std::string_view domain = "positive";
  static constexpr int64_t flops = 1;
  static constexpr UnaryReads reads{.x = false, .out = true};
  static Tensor grad(const Tensor& g, const Tensor&, const Tensor& out) { return g / (2 * out); }
};
struct RsqrtDef : kernels::RsqrtMath {
  static constexpr std::string_view reference = "torch.rsqrt";
  static constexpr std::string_view domain = "positive";
  static constexpr int64_t flops = 2;  // sqrt, reciprocal
  // d x^(-1/2) = -1/2 x^(-3/2) = -1/2 out³
  static constexpr UnaryReads reads{.x = false, .out = true};
  static Tensor grad(const Tensor& g, const Tensor&, const Tensor& out) { return g * out * out * out * -0.5; }
};
struct ExpDef : kernels::ExpMath {
  static constexpr std::string_view reference = "torch.exp";
  static constexpr std::string_view domain = "normal";
  static constexpr int64_t flops = 1;
  static kernels::Vec16f vec(kernels::Vec16f x) { return kernels::exp(x); }
  static constexpr UnaryReads reads{.x = false, .out = true};
  static Tensor grad(const Tensor& g, const Tensor&, const Tensor& out) { return g * out; }
};
struct LogDef : kernels::LogMath {
  static constexpr std::string_view reference = "torch.log";
  static constexpr std::string_view domain = "positive";
  static constexpr int64_t flops = 1;
  static constexpr UnaryReads reads{.x = true, .out = false};
  static Tensor grad(const Tensor& g, const Tensor& x, const Tensor&) { return g / x; }
};
struct TanhDef : kernels::TanhMath {
  static constexpr std::string_view reference = "torch.tanh";
  static constexpr std::string_view domain = "normal";
  static constexpr int64_t flops = 1;
  static kernels::Vec16f vec(kernels::Vec16f x) { return kernels::tanh(x); }
  static constexpr UnaryReads reads{.x = false, .out = true};
  static Tensor grad(const Tensor& g, const Tensor&, const Tensor& out) { return g * (1 - out * out); }
};
struct SigmoidDef : kernels::SigmoidMath {
  static constexpr std::string_view reference = "torch.sigmoid";
  static constexpr std::string_view domain = "normal";
  static constexpr int64_t flops = 4;  // negate, exp, add, divide
  static kernels::Vec16f vec(kernels::Vec16f x) {
    using namespace kernels;
    return div(splat(1.0f), add(splat(1.0f), kernels::exp(sub(splat(0.0f), x))));
  }
  static constexpr UnaryReads reads{.x = false, .out = true};
  static Tensor grad(const Tensor& g, const Tensor&, const Tensor& out) { return g * out * (1 - out); }
};
struct SiluDef : kernels::SiluMath {
  static constexpr std::string_view reference = "torch.nn.functional.silu";
  static constexpr std::string_view domain = "normal";
  static constexpr int64_t flops = 5;  // sigmoid (4), multiply
  static kernels::Vec16f vec(kernels::Vec16f x) { return kernels::mul(x, SigmoidDef::vec(x)); }
  // d x·s(x) = s + x·s·(1 - s)
  static constexpr UnaryReads reads{.x = true, .out = false};
  static Tensor grad(const Tensor& g, const Tensor& x, const Tensor&) {
    Tensor sg = sigmoid(x);
    return g * (sg + x * sg * (1 - sg));
  }
};
struct ErfDef : kernels::ErfMath {
  static constexpr std::string_view reference = "torch.erf";
  static constexpr std::string_view domain = "normal";
  static constexpr int64_t flops = 1;
  static kernels::Vec16f vec(kernels::Vec16f x) { return kernels::erf(x); }
  // d erf(x) = 2/√π · e^(-x²)
  static constexpr UnaryReads reads{.x = true, .out = false};
  static Tensor grad(const Tensor& g, const Tensor& x, const Tensor&) { return g * exp(-(x * x)) * 1.1283791670955126; }
};
struct SoftplusDef : kernels::SoftplusMath {
  static constexpr std::string_view reference = "torch.nn.functional.softplus";
  static constexpr std::string_view domain = "normal";
  static constexpr int64_t flops = 3;  // exp, +1, log
  // d log(1 + eˣ) = sigmoid(x)
  static constexpr UnaryReads reads{.x = true, .out = false};
  static Tensor grad(const Tensor& g, const Tensor& x, const Tensor&) { return g * sigmoid(x); }
};
struct Log1pDef : kernels::Log1pMath {
  static constexpr std::string_view reference = "torch.log1p";
  static constexpr std::string_view domain = "positive";
  static constexpr int64_t flops = 2;  // +1, log (one call, counted as its two steps)
  // d log(1 + x) = 1 / (1 + x)
  static constexpr UnaryReads reads{.x = true, .out = false};
  static Tensor grad(const Tensor& g, const Tensor& x, const Tensor&) { return g / (x + 1); }
};
struct SinDef : kernels::SinMath {
  static constexpr std::string_view reference = "torch.sin";
  static constexpr std::string_view domain = "normal";
  static constexpr int64_t flops = 1;
  static constexpr UnaryReads reads{.x = true, .out = false};
  static Tensor grad(const Tensor& g, const Tensor& x, const Tensor&) { return g * cos(x); }
};
struct CosDef : kernels::CosMath {
  static constexpr std::string_view reference = "torch.cos";
  static constexpr std::string_view domain = "normal";
  static constexpr int64_t flops = 1;
  static constexpr UnaryReads reads{.x = true, .out = false};
  static Tensor grad(const Tensor& g, const Tensor& x, const Tensor&) { return -(g * sin(x)); }
};
struct Expm1Def : kernels::Expm1Math {
  static constexpr std::string_view reference = "torch.expm1";
  static constexpr std::string_view domain = "normal";
  static constexpr int64_t flops = 2;  // exp, −1 (one call, counted as its two steps, as log1p)
  // d (eˣ − 1) = eˣ = out + 1
  static constexpr UnaryReads reads{.x = false, .out = true};
  static Tensor grad(const Tensor& g, const Tensor&, const Tensor& out) { return g * (out + 1); }
};
/// log2 and log10: ln x scaled, so each counts two steps, as log1p; d log_b x = 1 / (x · ln b).
template <class Math, double kLnBase>
struct LogBaseDef : Math {
  static constexpr std::string_view domain = "positive";
  static constexpr int64_t flops = 2;
  static constexpr UnaryReads reads{.x = true, .out = false};
  static Tensor grad(const Tensor& g, const Tensor& x, const Tensor&) { return g / (x * kLnBase); }
};
struct Log2Def : LogBaseDef<kernels::Log2Math, M_LN2> {
  static constexpr std::string_view reference = "torch.log2";
};
struct Log10Def : LogBaseDef<kernels::Log10Math, M_LN10> {
  static constexpr std::string_view reference = "torch.log10";
};
struct ReciprocalDef : kernels::ReciprocalMath {
  static constexpr std::string_view reference = "torch.reciprocal";
  static constexpr std::string_view domain = "positive";
  static constexpr int64_t flops = 1;
  // d x⁻¹ = −x⁻² = −out²
  static constexpr UnaryReads reads{.x = false, .out = true};
  static Tensor grad(const Tensor& g, const Tensor&, const Tensor& out) { return -(g * out * out); }
};

/// Rounding to a whole number (and sign): the gradient is zero wherever it exists, as PyTorch's.
template <class Math>
struct ZeroGradientDef : Math {
  static constexpr std::string_view domain = "normal";
  static constexpr int64_t flops = 1;
  static constexpr UnaryReads reads{.x = false, .out = false};
  static Tensor grad(const Tensor& g, const Tensor&, const Tensor&) { return zeros_like(g); }
};
struct FloorDef : ZeroGradientDef<kernels::FloorMath> {
  static constexpr std::string_view reference = "torch.floor";
};
struct CeilDef : ZeroGradientDef<kernels::CeilMath> {
  static constexpr std::string_view reference = "torch.ceil";
};
struct RoundDef : ZeroGradientDef<kernels::RoundMath> {
  static constexpr std::string_view reference = "torch.round";
};
struct TruncDef : ZeroGradientDef<kernels::TruncMath> {
  static constexpr std::string_view reference = "torch.trunc";
};
struct SignDef : ZeroGradientDef<kernels::SignMath> {
  static constexpr std::string_view reference = "torch.sign";
};
struct ReluDef : kernels::ReluMath {
  static constexpr std::string_view reference = "torch.relu";
  static constexpr std::string_view domain = "normal";
  static constexpr int64_t flops = 1;
  // max returns x for a NaN, and −0 for −0, which + 0 makes the scalar form's +0.
  static kernels::Vec16f vec(kernels::Vec16f x) { return kernels::add(kernels::max(kernels::splat(0.0f), x), kernels::splat(0.0f)); }
  // From the output, as torch's threshold_backward(grad, result, 0): the same mask (out > 0 where
  // x > 0; a NaN or −0 gives 0 either way), and the input is not kept for it, which the next op
  // (a Linear saves its input, the output here) may already keep.
  static constexpr UnaryReads reads{.x = false, .out = true};
  static Tensor grad(const Tensor& g, const Tensor&, const Tensor& out) { return g * (out > 0).to(g.dtype()); }
};
struct SquareDef : kernels::SquareMath {
  static constexpr std::string_view reference = "torch.square";
  static constexpr std::string_view domain = "normal";
  static constexpr int64_t flops = 1;
  static constexpr UnaryReads reads{.x = true, .out = false};
  static Tensor grad(const Tensor& g, const Tensor& x, const Tensor&) { return g * 2 * x; }
};
struct LogitDef : kernels::LogitMath {
  static constexpr std::string_view reference = "torch.logit";
  static constexpr std::string_view domain = "unit";
  static constexpr int64_t flops = 3;  // 1 − x, divide, log
  // d ln(x / (1 − x)) = 1 / (x·(1 − x))
  static constexpr UnaryReads reads{.x = true, .out = false};
  static Tensor grad(const Tensor& g, const Tensor& x, const Tensor&) { return g / (x * (1 - x)); }
};

/// PyTorch's gelu_backward for the exact GELU: g · (Φ(x) + x·φ(x)) in one pass, computed in
/// float32 and rounded once. Backward is memory-bound, so one pass instead of the ten of the
/// composed rule is what makes it fast (a fused kernel's FLOPs are the composed rule's). On the
/// GPU, where no fused kernel is written yet, the same rule runs as elementwise ops.
struct GeluBackward {
  static constexpr std::string_view name = "gelu_backward";
  static constexpr bool supports_cuda = true;
  static constexpr bool elementwise = true;
  static ops::OutputSpec meta(const Tensor& g, const Tensor& x) {
    TALLY_CHECK(g.sizes() == x.sizes(), "gelu_backward: gradient of shape ", g.sizes(), " for an input of shape ", x.sizes());
    TALLY_CHECK_TYPE_ERROR(is_floating_point(x.dtype()) && g.dtype() == x.dtype(), "gelu_backward: expected floating tensors of one dtype, got ",
                           dtype_name(g.dtype()), " and ", dtype_name(x.dtype()));
    return {DimVector(x.sizes()), x.dtype()};
  }
  static void compute(const Tensor& out, const Tensor& g, const Tensor& x) {
    if (out.is_cuda()) {
      Tensor(out).copy_(g * (0.5 * (1 + erf(x * M_SQRT1_2)) + x * (exp(-0.5 * x * x) * 0.3989422804014327)));
      return;
    }
    cpu_kernels().run<&GeluBackward::kernel>(ops::make_loop<3>(out, {&g, &x}), out.dtype());
  }
  static void kernel(const kernels::StridedLoop<3>& loop, Dtype dt) {
    dispatch(dt, name, [&]<class T>() {
      using C = compute_t<T>;
      if constexpr (!std::is_floating_point_v<C>) {
        kernels::detail::unknown_kernel_dtype(dt);
      } else {
        struct F {
          C operator()(C g, C x) const { return g * (normal_cdf(x) + x * std::exp(C(-0.5) * x * x) * C(0.3989422804014327)); }
          kernels::Vec16f vec(kernels::Vec16f g, kernels::Vec16f x) const {
            using namespace kernels;
            const Vec16f pdf = mul(kernels::exp(mul(splat(-0.5f), mul(x, x))), splat(0.3989422804014327f));
            return mul(g, add(normal_cdf(x), mul(x, pdf)));
          }
        };
        kernels::binary_kernel<T, T>(loop, F{});
      }
    });
  }
  // The composed rule's steps: x/√2, erf, +1, ×½ (Φ); x², ×−½, exp, ×1/√(2π) (φ); ×x, +, ×g.
  static ops::Cost cost(const Tensor& out, const Tensor& g, const Tensor& x) { return ops::elementwise_cost(out, {&g, &x}, 11); }
  // Its own derivative, for gradients of gradients (Note [Higher-order gradients] in
  // autograd/engine.h): d/dg is this op again; d/dx is g·φ(x)·(2 − x²), as φ' = −x·φ.
  static TensorList backward(const ops::BackwardContext& c, const Tensor& g, const Tensor& x) {
    TensorList grads(2);
    if (c.needs_grad(0)) grads[0] = ops::apply<GeluBackward>(c.grad.to(x.dtype()), x);
    if (c.needs_grad(1)) grads[1] = c.grad * g * exp(-0.5 * x * x) * 0.3989422804014327 * (2 - x * x);
    return grads;
  }
};

struct GeluErfDef : kernels::GeluErfMath {
  static constexpr int64_t flops = 5;  // x/√2, erf, +1, ×x, ×0.5
  static kernels::Vec16f vec(kernels::Vec16f x) { return kernels::mul(x, normal_cdf(x)); }
  // d x·Φ(x) = Φ(x) + x·φ(x): gelu_backward above.
  static constexpr UnaryReads reads{.x = true, .out = false};
  static Tensor grad(const Tensor& g, const Tensor& x, const Tensor&) { return ops::apply<GeluBackward>(g.to(x.dtype()), x); }
};
struct GeluTanhDef : kernels::GeluTanhMath {
  static constexpr int64_t flops = 9;  // x³ (2), ×0.044715, +x, ×√(2/π), tanh, +1, ×x, ×0.5
  static kernels::Vec16f vec(kernels::Vec16f x) {
    using namespace kernels;
    const Vec16f inner = mul(splat(0.7978845608028654f), add(x, mul(mul(mul(splat(0.044715f), x), x), x)));
    return mul(mul(splat(0.5f), x), add(splat(1.0f), kernels::tanh(inner)));
  }
  // d ½x(1 + tanh u), u = √(2/π)(x + 0.044715x³): ½(1 + tanh u) + ½x(1 - tanh² u)·√(2/π)(1 + 3·0.044715x²)
  static constexpr UnaryReads reads{.x = true, .out = false};
  static Tensor grad(const Tensor& g, const Tensor& x, const Tensor&) {
    Tensor t = tanh((x + x * x * x * 0.044715) * 0.7978845608028654);
    return g * (0.5 * (1 + t) + 0.5 * x * (1 - t * t) * 0.7978845608028654 * (1 + x * x * (3 * 0.044715)));
  }
};

/// Each definition's name and CUDA kernel: its table row's, or for gelu's two forms the op's.
template <class Def> struct Row;
#define TALLY_UNARY_ROW_(fn, Name, what) TALLY_ELEMENTWISE_ROW(Name##Def, #fn, kernels::cuda::UnaryOp::Name)
TALLY_FORALL_UNARY_OPS(TALLY_UNARY_ROW_)
#undef TALLY_UNARY_ROW_
TALLY_ELEMENTWISE_ROW(GeluErfDef, "gelu", kernels::cuda::UnaryOp::GeluErf)
TALLY_ELEMENTWISE_ROW(GeluTanhDef, "gelu", kernels::cuda::UnaryOp::GeluTanh)

/// A lane function `lane` (scalar, the compute type) with its 16-lane form `lanes`, for the
/// elementwise kernels' vector path (kernels::HasVecFloat).
template <class C, class Lane, class Lanes>
struct WithVec {
  Lane lane;
  Lanes lanes;
  C operator()(C v) const { return lane(v); }
  kernels::Vec16f vec(kernels::Vec16f v) const { return lanes(v); }
};
template <class C, class Lane, class Lanes>
WithVec<C, Lane, Lanes> with_vec(Lane lane, Lanes lanes) {
  return {lane, lanes};
}

/// The result dtype of Def on `in`, raising for inputs Def does not take.
template <class Def>
Dtype unary_result_dtype(Dtype in) {
  switch (Def::input) {
    case InputRule::Any: return in;
    case InputRule::Negatable:
      TALLY_CHECK_TYPE_ERROR(in != kBool, "Negation, the `-` operator, on a bool tensor is not supported. If you are "
                             "trying to invert a mask, use the `~` or `logical_not()` operator instead.");
      return in;
    case InputRule::NoBool:
      TALLY_CHECK_TYPE_ERROR(in != kBool, "\"", Row<Def>::name, "\" not implemented for 'Bool': boolean inputs are not supported");
      return in;
    case InputRule::IntToFloat: return is_floating_point(in) ? in : get_default_dtype();
    case InputRule::FloatOnly:
      TALLY_CHECK_TYPE_ERROR(is_floating_point(in), "\"", Row<Def>::name, "\" not implemented for '", dtype_name(in),
                             "': floating-point input required");
      return in;
    case InputRule::BoolToLong: return in == kBool ? kInt64 : in;
  }
  return in;
}

template <class Def>
struct Unary {
  static constexpr std::string_view name = Row<Def>::name;
  static constexpr bool supports_cuda = true;
  static constexpr bool elementwise = true;
  static ops::OutputSpec meta(const Tensor& x) {
    const Dtype dt = unary_result_dtype<Def>(x.dtype());
    check_arith(dt, name);
    return {DimVector(x.sizes()), dt};
  }
  static void compute(const Tensor& out, const Tensor& x) {
    const Dtype dt = out.dtype();
    Tensor in = x.to(dt);
    if (out.is_cuda()) return kernels::cuda::unary(Row<Def>::cuda_op, ops::cuda_launch<2>(out, {&in}));
    cpu_kernels().run<&Unary::kernel>(ops::make_loop<2>(out, {&in}), dt);
  }
  /// The CPU loop, built once per target (Note [CPU kernel dispatch]).
  static void kernel(const kernels::StridedLoop<2>& loop, Dtype dt) {
    dispatch(dt, name, [&]<class T>() {
      using C = compute_t<T>;
      if constexpr ((Def::input == InputRule::IntToFloat || Def::input == InputRule::FloatOnly) &&
                    !std::is_floating_point_v<C>) {
        kernels::detail::unknown_kernel_dtype(dt);  // meta sent integers to float32
      } else if constexpr (requires { Def::vec(kernels::Vec16f{}); }) {
        kernels::unary_kernel<T, T>(loop, with_vec<C>([](C v) { return Def::template f<C>(v); }, [](kernels::Vec16f v) { return Def::vec(v); }));
      } else {
        kernels::unary_kernel<T, T>(loop, [](C v) { return Def::template f<C>(v); });
      }
    });
  }
  static ops::Cost cost(const Tensor& out, const Tensor& x) { return ops::elementwise_cost(out, {&x}, Def::flops); }
  static ops::SavedTensors saved(const SmallVector<bool, 4>&) { return {{Def::reads.x}, Def::reads.out}; }
  static TensorList backward(const ops::BackwardContext& c, const Tensor& x) { return {Def::grad(c.grad, x, c.out)}; }
};

/// x ** exponent for a number exponent; the common exponents get exact fast forms.
struct PowScalar {
  static constexpr std::string_view name = "pow";
  static constexpr bool supports_cuda = true;
  static constexpr bool elementwise = true;
  static ops::OutputSpec meta(const Tensor& x, Scalar exponent) {
    const Dtype dt = result_type(x, exponent);
    // bool ** True stays bool, which PyTorch's pow kernels do not take (bool ** 2 is int64).
    TALLY_CHECK_TYPE_ERROR(dt != kBool, "\"pow\" not implemented for 'Bool'");
    if (is_integral(dt)) {
      TALLY_CHECK(exponent.to_long() >= 0 || exponent.is_floating_point(), "Integers to negative integer powers are not allowed.");
    }
    check_scalar_fits(exponent, dt, "pow");  // PyTorch: 2 ** 1e11 on int32 "cannot be converted ... without overflow"
    check_arith(dt, "pow");
    return {DimVector(x.sizes()), dt};
  }
  static void compute(const Tensor& out, const Tensor& x, Scalar exponent) {
    const Dtype dt = out.dtype();
    Tensor in = x.to(dt);
    if (out.is_cuda()) return kernels::cuda::pow_scalar(ops::cuda_launch<2>(out, {&in}), exponent.to_double());
    cpu_kernels().run<&PowScalar::kernel>(ops::make_loop<2>(out, {&in}), dt, exponent);
  }
  static void kernel(const kernels::StridedLoop<2>& loop, Dtype dt, Scalar exponent) {
    dispatch(dt, "pow", [&]<class T>() {
      using C = compute_t<T>;
      const double e = exponent.to_double();
      if constexpr (std::is_integral_v<C>) {
        const int64_t n = exponent.to_long();
        kernels::unary_kernel<T, T>(loop, [n](C v) {
          C r = 1, b = v;
          for (int64_t k = n; k > 0; k >>= 1) {
            if (k & 1) r = static_cast<C>(r * b);
            b = static_cast<C>(b * b);
          }
          return r;
        });
      } else {
        // PyTorch's forms for 1, 2, 3, ±0.5, −1 and −2 (its pow kernels): products, quotients
        // and square roots instead of std::pow, as fast as a multiply (x ** 3 was 57 times
        // slower) and rounding as PyTorch's; 16 lanes at a time.
        using kernels::Vec16f;
        auto run = [&](auto lane, auto lanes) { kernels::unary_kernel<T, T>(loop, with_vec<C>(lane, lanes)); };
        if (e == 1.0) run([](C v) { return v; }, [](Vec16f v) { return v; });
        else if (e == 2.0) run([](C v) { return v * v; }, [](Vec16f v) { return kernels::mul(v, v); });
        else if (e == 3.0) run([](C v) { return v * v * v; }, [](Vec16f v) { return kernels::mul(kernels::mul(v, v), v); });
        else if (e == 0.5) run([](C v) { return std::sqrt(v); }, [](Vec16f v) { return kernels::sqrt(v); });
        else if (e == -0.5) run([](C v) { return C(1) / std::sqrt(v); }, [](Vec16f v) { return kernels::div(kernels::splat(1.0f), kernels::sqrt(v)); });
        else if (e == -1.0) run([](C v) { return C(1) / v; }, [](Vec16f v) { return kernels::div(kernels::splat(1.0f), v); });
        else if (e == -2.0) run([](C v) { return C(1) / (v * v); }, [](Vec16f v) { return kernels::div(kernels::splat(1.0f), kernels::mul(v, v)); });
        else kernels::unary_kernel<T, T>(loop, [ce = static_cast<C>(e)](C v) { return std::pow(v, ce); });
      }
    });
  }
  static ops::Cost cost(const Tensor& out, const Tensor& x, Scalar) { return ops::elementwise_cost(out, {&x}, 1); }
  // d x^e = e·x^(e-1): reads x, not the output (so the output may be written in place, as torch's).
  static ops::SavedTensors saved(const SmallVector<bool, 4>&) { return {{true}, false}; }
  static TensorList backward(const ops::BackwardContext& c, const Tensor& x, Scalar exponent) {
    const double e = exponent.to_double();
    if (e == 0.0) return {zeros_like(x)};
    return {c.grad * e * pow(x, e - 1)};
  }
};

struct Clamp {
  static constexpr std::string_view name = "clamp";
  static constexpr bool supports_cuda = true;
  static constexpr bool elementwise = true;
  static ops::OutputSpec meta(const Tensor& x, std::optional<Scalar> lo, std::optional<Scalar> hi) {
    TALLY_CHECK(lo || hi, "torch.clamp: At least one of 'min' or 'max' must not be None");
    Dtype dt = x.dtype();
    // The bounds join as numbers: each may lift the category (an integer tensor, a float bound).
    for (const std::optional<Scalar>& bound : {lo, hi})
      if (bound) dt = result_type(dt, *bound);
    check_arith(dt, "clamp");
    for (const std::optional<Scalar>& bound : {lo, hi})
      if (bound) check_scalar_fits(*bound, dt, "clamp");
    return {DimVector(x.sizes()), dt};
  }
  static void compute(const Tensor& out, const Tensor& x, std::optional<Scalar> lo, std::optional<Scalar> hi) {
    // With both bounds, a NaN one makes every element NaN, as torch 1.13's clamp fills its result;
    // a lone NaN bound compares false everywhere and leaves x as it is, as PyTorch's does too.
    if (lo && hi && (std::isnan(lo->to_double()) || std::isnan(hi->to_double()))) {
      Tensor(out).fill_(std::numeric_limits<double>::quiet_NaN());
      return;
    }
    const Dtype dt = out.dtype();
    Tensor in = x.to(dt);
    if (out.is_cuda()) {
      return kernels::cuda::clamp(ops::cuda_launch<2>(out, {&in}), lo.has_value(), lo ? lo->to_double() : 0.0, hi.has_value(),
                                  hi ? hi->to_double() : 0.0);
    }
    cpu_kernels().run<&Clamp::kernel>(ops::make_loop<2>(out, {&in}), dt, lo, hi);
  }
  static void kernel(const kernels::StridedLoop<2>& loop, Dtype dt, std::optional<Scalar> lo, std::optional<Scalar> hi) {
    dispatch(dt, "clamp", [&]<class T>() {
      using C = compute_t<T>;
      const C l = lo ? lo->to<C>() : C(0), h = hi ? hi->to<C>() : C(0);
      const bool has_l = lo.has_value(), has_h = hi.has_value();
      auto lane = [=](C v) {
        if constexpr (std::is_floating_point_v<C>) {
          if (std::isnan(v)) return v;
        }
        if (has_l && v < l) v = l;
        if (has_h && v > h) v = h;
        return v;
      };
      // The same in 16 lanes: max and min return their second operand, x, for a NaN and for
      // equal zeros, as the comparisons above leave it.
      const float lf = static_cast<float>(l), hf = static_cast<float>(h);
      auto lanes = [=](kernels::Vec16f v) {
        if (has_l) v = kernels::max(kernels::splat(lf), v);
        if (has_h) v = kernels::min(kernels::splat(hf), v);
        return v;
      };
      kernels::unary_kernel<T, T>(loop, with_vec<C>(lane, lanes));
    });
  }
  static ops::Cost cost(const Tensor& out, const Tensor& x, std::optional<Scalar> lo, std::optional<Scalar> hi) {
    return ops::elementwise_cost(out, {&x}, int64_t{lo.has_value()} + int64_t{hi.has_value()});
  }
  // The gradient passes where x was inside [min, max] (bounds included, as in PyTorch).
  // The mask comes from x alone; the output is not kept.
  static ops::SavedTensors saved(const SmallVector<bool, 4>&) { return {{true}, false}; }
  static TensorList backward(const ops::BackwardContext& c, const Tensor& x, std::optional<Scalar> lo, std::optional<Scalar> hi) {
    Tensor pass = ones_like(x, kBool);
    if (lo) pass = where(x >= *lo, pass, zeros_like(pass));
    if (hi) pass = where(x <= *hi, pass, zeros_like(pass));
    return {c.grad * pass.to(c.grad.dtype())};
  }
};

}  // namespace

#if TALLY_PRIMARY_PASS
// Every form of every row of the table: the function, out=, the method and in place.
#define TALLY_UNARY_FORMS_(fn, Name, what)                                                                  \
  Tensor fn(const Tensor& x) { return ops::apply<Unary<Name##Def>>(x); }                                  \
  Tensor& fn##_out(Tensor& out, const Tensor& x) { return ops::apply_out<Unary<Name##Def>>(out, x); }     \
  Tensor Tensor::fn() const { return tally::fn(*this); }                                                  \
  Tensor& Tensor::fn##_() const { return ops::apply_inplace<Unary<Name##Def>>(*this); }
TALLY_FORALL_UNARY_OPS(TALLY_UNARY_FORMS_)
#undef TALLY_UNARY_FORMS_

Tensor gelu(const Tensor& x, std::string_view approximate) {
  if (approximate == "none") return ops::apply<Unary<GeluErfDef>>(x);
  TALLY_CHECK(approximate == "tanh", "approximate argument must be either none or tanh, got '", approximate, "'");
  return ops::apply<Unary<GeluTanhDef>>(x);
}
Tensor pow(const Tensor& a, Scalar exponent) { return ops::apply<PowScalar>(a, exponent); }
Tensor clamp(const Tensor& x, std::optional<Scalar> min, std::optional<Scalar> max) {
  return ops::apply<Clamp>(x, min, max);
}
Tensor operator-(const Tensor& x) { return neg(x); }

const std::vector<ops::UnaryOpInfo>& ops::unary_ops() {
  static const std::vector<UnaryOpInfo> table = {
#define TALLY_UNARY_INFO_(op, Name, what)                                                                     \
  UnaryOpInfo{.name = #op, .summary = what, .reference = Name##Def::reference, .domain = Name##Def::domain,  \
              .flops = Name##Def::flops, .floating_only = Name##Def::input == InputRule::FloatOnly,          \
              .differentiable = requires { &Name##Def::grad; }, .fn = tally::op, .out = tally::op##_out,      \
              .method = [](const Tensor& x) { return x.op(); },                                              \
              .inplace = [](const Tensor& x) -> Tensor& { return x.op##_(); }},
      TALLY_FORALL_UNARY_OPS(TALLY_UNARY_INFO_)
#undef TALLY_UNARY_INFO_
  };
  return table;
}

Tensor& clamp_out(Tensor& out, const Tensor& x, std::optional<Scalar> min, std::optional<Scalar> max) {
  return ops::apply_out<Clamp>(out, x, min, max);
}
Tensor& Tensor::clamp_(std::optional<Scalar> min, std::optional<Scalar> max) const { return ops::apply_inplace<Clamp>(*this, min, max); }
Tensor& Tensor::pow_(Scalar exponent) const { return ops::apply_inplace<PowScalar>(*this, exponent); }

Tensor Tensor::pow(Scalar exponent) const { return tally::pow(*this, exponent); }
Tensor Tensor::clamp(std::optional<Scalar> min, std::optional<Scalar> max) const { return tally::clamp(*this, min, max); }
#endif  // TALLY_PRIMARY_PASS

}  // namespace tally

#define TALLY_UNARY_KERNEL_(fn, Name, what) &Unary<Name##Def>::kernel,
TALLY_CPU_KERNELS(unary, TALLY_FORALL_UNARY_OPS(TALLY_UNARY_KERNEL_) &Unary<GeluErfDef>::kernel, &Unary<GeluTanhDef>::kernel,
                  &GeluBackward::kernel, &PowScalar::kernel, &Clamp::kernel)
#undef TALLY_UNARY_KERNEL_
