// Unary elementwise ops. Each op is a definition (name, FLOPs per element as arithmetic steps,
// whether integers compute in float32, scalar function, optional AVX-512 form); Unary<Def>
// turns it into an op run by apply().

#include <cmath>
#include <limits>

#include "tally/core/geometry.h"
#include "tally/kernels/cpu/dispatch.h"
#include "tally/ops/cuda_launch.h"
#include "tally/ops/elementwise.h"
#include "tally/ops/elementwise_common.h"
#include "tally/ops/reduce.h"
#include "tally/ops/registry.h"

namespace tally {

namespace {

/// Which input dtypes an op takes, and the dtype of its result (PyTorch's rules).
enum class InputRule {
  Any,         // every arithmetic dtype, result of the input's dtype
  Negatable,   // as Any, but bool is refused (neg)
  NoBool,      // as Any, but bool is refused with "not implemented for 'Bool'" (abs, relu)
  IntToFloat,  // integers and bool compute in float32 (exp, log, ...)
  FloatOnly,   // floating dtypes only (gelu, silu)
  BoolToLong,  // bool becomes int64 (square, which PyTorch computes as pow(x, 2))
};

/// What a unary op's gradient rule reads (Note [Saved tensors] in ops/apply.h).
struct UnaryReads {
  bool x = false, out = false;
};

template <class C> C sigmoid_of(C x) { return C(1) / (C(1) + std::exp(-x)); }

/// Φ(x) = ½(1 + erf(x/√2)), the standard normal CDF (exact GELU is x·Φ(x)), in scalar and Vec16f form.
template <class C> C normal_cdf(C x) { return C(0.5) * (C(1) + std::erf(x * C(M_SQRT1_2))); }
inline kernels::Vec16f normal_cdf(kernels::Vec16f x) {
  using namespace kernels;
  return mul(splat(0.5f), add(splat(1.0f), erf(mul(x, splat(static_cast<float>(M_SQRT1_2))))));
}

struct NegDef {
  static constexpr std::string_view name = "neg";
  static constexpr std::string_view reference = "torch.neg";
  static constexpr std::string_view domain = "normal";
  static constexpr auto cuda_op = kernels::cuda::UnaryOp::Neg;
  static constexpr int64_t flops = 1;
  static constexpr InputRule input = InputRule::Negatable;
  template <class C> static C f(C x) { return static_cast<C>(-x); }
  static constexpr UnaryReads reads{.x = false, .out = false};
  static Tensor grad(const Tensor& g, const Tensor&, const Tensor&) { return -g; }
};
struct AbsDef {
  static constexpr std::string_view name = "abs";
  static constexpr std::string_view reference = "torch.abs";
  static constexpr std::string_view domain = "normal";
  static constexpr auto cuda_op = kernels::cuda::UnaryOp::Abs;
  static constexpr int64_t flops = 1;
  static constexpr InputRule input = InputRule::NoBool;
  template <class C> static C f(C x) {
    if constexpr (std::is_unsigned_v<C> || std::is_same_v<C, bool>) return x;
    else if constexpr (std::is_floating_point_v<C>) return std::fabs(x);  // |−0| is +0 (x < 0 is false for −0)
    else return x < 0 ? static_cast<C>(-x) : x;
  }
  // d|x| = sign(x), 0 at 0 as in PyTorch
  static constexpr UnaryReads reads{.x = true, .out = false};
  static Tensor grad(const Tensor& g, const Tensor& x, const Tensor&) { return g * ((x > 0).to(g.dtype()) - (x < 0).to(g.dtype())); }
};
struct SqrtDef {
  static constexpr std::string_view name = "sqrt";
  static constexpr std::string_view reference = "torch.sqrt";
  static constexpr std::string_view domain = "positive";
  static constexpr auto cuda_op = kernels::cuda::UnaryOp::Sqrt;
  static constexpr int64_t flops = 1;
  static constexpr InputRule input = InputRule::IntToFloat;
  template <class C> static C f(C x) { return std::sqrt(x); }
  static constexpr UnaryReads reads{.x = false, .out = true};
  static Tensor grad(const Tensor& g, const Tensor&, const Tensor& out) { return g / (2 * out); }
};
struct RsqrtDef {
  static constexpr std::string_view name = "rsqrt";
  static constexpr std::string_view reference = "torch.rsqrt";
  static constexpr std::string_view domain = "positive";
  static constexpr auto cuda_op = kernels::cuda::UnaryOp::Rsqrt;
  static constexpr int64_t flops = 2;  // sqrt, reciprocal
  static constexpr InputRule input = InputRule::IntToFloat;
  template <class C> static C f(C x) { return C(1) / std::sqrt(x); }
  // d x^(-1/2) = -1/2 x^(-3/2) = -1/2 out³
  static constexpr UnaryReads reads{.x = false, .out = true};
  static Tensor grad(const Tensor& g, const Tensor&, const Tensor& out) { return g * out * out * out * -0.5; }
};
struct ExpDef {
  static constexpr std::string_view name = "exp";
  static constexpr std::string_view reference = "torch.exp";
  static constexpr std::string_view domain = "normal";
  static constexpr auto cuda_op = kernels::cuda::UnaryOp::Exp;
  static constexpr int64_t flops = 1;
  static constexpr InputRule input = InputRule::IntToFloat;
  template <class C> static C f(C x) { return std::exp(x); }
  static kernels::Vec16f vec(kernels::Vec16f x) { return kernels::exp(x); }
  static constexpr UnaryReads reads{.x = false, .out = true};
  static Tensor grad(const Tensor& g, const Tensor&, const Tensor& out) { return g * out; }
};
struct LogDef {
  static constexpr std::string_view name = "log";
  static constexpr std::string_view reference = "torch.log";
  static constexpr std::string_view domain = "positive";
  static constexpr auto cuda_op = kernels::cuda::UnaryOp::Log;
  static constexpr int64_t flops = 1;
  static constexpr InputRule input = InputRule::IntToFloat;
  template <class C> static C f(C x) { return std::log(x); }
  static constexpr UnaryReads reads{.x = true, .out = false};
  static Tensor grad(const Tensor& g, const Tensor& x, const Tensor&) { return g / x; }
};
struct TanhDef {
  static constexpr std::string_view name = "tanh";
  static constexpr std::string_view reference = "torch.tanh";
  static constexpr std::string_view domain = "normal";
  static constexpr auto cuda_op = kernels::cuda::UnaryOp::Tanh;
  static constexpr int64_t flops = 1;
  static constexpr InputRule input = InputRule::IntToFloat;
  template <class C> static C f(C x) { return std::tanh(x); }
  static kernels::Vec16f vec(kernels::Vec16f x) { return kernels::tanh(x); }
  static constexpr UnaryReads reads{.x = false, .out = true};
  static Tensor grad(const Tensor& g, const Tensor&, const Tensor& out) { return g * (1 - out * out); }
};
struct SigmoidDef {
  static constexpr std::string_view name = "sigmoid";
  static constexpr std::string_view reference = "torch.sigmoid";
  static constexpr std::string_view domain = "normal";
  static constexpr auto cuda_op = kernels::cuda::UnaryOp::Sigmoid;
  static constexpr int64_t flops = 4;  // negate, exp, add, divide
  static constexpr InputRule input = InputRule::IntToFloat;
  template <class C> static C f(C x) { return sigmoid_of(x); }
  static kernels::Vec16f vec(kernels::Vec16f x) {
    using namespace kernels;
    return div(splat(1.0f), add(splat(1.0f), kernels::exp(sub(splat(0.0f), x))));
  }
  static constexpr UnaryReads reads{.x = false, .out = true};
  static Tensor grad(const Tensor& g, const Tensor&, const Tensor& out) { return g * out * (1 - out); }
};
struct SiluDef {
  static constexpr std::string_view name = "silu";
  static constexpr std::string_view reference = "torch.nn.functional.silu";
  static constexpr std::string_view domain = "normal";
  static constexpr auto cuda_op = kernels::cuda::UnaryOp::Silu;
  static constexpr int64_t flops = 5;  // sigmoid (4), multiply
  static constexpr InputRule input = InputRule::FloatOnly;
  template <class C> static C f(C x) { return x * sigmoid_of(x); }
  static kernels::Vec16f vec(kernels::Vec16f x) { return kernels::mul(x, SigmoidDef::vec(x)); }
  // d x·s(x) = s + x·s·(1 - s)
  static constexpr UnaryReads reads{.x = true, .out = false};
  static Tensor grad(const Tensor& g, const Tensor& x, const Tensor&) {
    Tensor sg = sigmoid(x);
    return g * (sg + x * sg * (1 - sg));
  }
};
struct ErfDef {
  static constexpr std::string_view name = "erf";
  static constexpr std::string_view reference = "torch.erf";
  static constexpr std::string_view domain = "normal";
  static constexpr auto cuda_op = kernels::cuda::UnaryOp::Erf;
  static constexpr int64_t flops = 1;
  static constexpr InputRule input = InputRule::IntToFloat;
  template <class C> static C f(C x) { return std::erf(x); }
  static kernels::Vec16f vec(kernels::Vec16f x) { return kernels::erf(x); }
  // d erf(x) = 2/√π · e^(-x²)
  static constexpr UnaryReads reads{.x = true, .out = false};
  static Tensor grad(const Tensor& g, const Tensor& x, const Tensor&) { return g * exp(-(x * x)) * 1.1283791670955126; }
};
struct SoftplusDef {
  static constexpr std::string_view name = "softplus";
  static constexpr std::string_view reference = "torch.nn.functional.softplus";
  static constexpr std::string_view domain = "normal";
  static constexpr int64_t flops = 3;  // exp, +1, log
  static constexpr InputRule input = InputRule::FloatOnly;
  // log(1 + eˣ), and x itself above 20 where that is x to within rounding (PyTorch's threshold).
  template <class C> static C f(C x) { return x > C(20) ? x : std::log1p(std::exp(x)); }
  // d log(1 + eˣ) = sigmoid(x)
  static constexpr UnaryReads reads{.x = true, .out = false};
  static Tensor grad(const Tensor& g, const Tensor& x, const Tensor&) { return g * sigmoid(x); }
};
struct Log1pDef {
  static constexpr std::string_view name = "log1p";
  static constexpr std::string_view reference = "torch.log1p";
  static constexpr std::string_view domain = "positive";
  static constexpr int64_t flops = 2;  // +1, log (one call, counted as its two steps)
  static constexpr InputRule input = InputRule::IntToFloat;
  template <class C> static C f(C x) { return std::log1p(x); }
  // d log(1 + x) = 1 / (1 + x)
  static constexpr UnaryReads reads{.x = true, .out = false};
  static Tensor grad(const Tensor& g, const Tensor& x, const Tensor&) { return g / (x + 1); }
};
struct SinDef {
  static constexpr std::string_view name = "sin";
  static constexpr std::string_view reference = "torch.sin";
  static constexpr std::string_view domain = "normal";
  static constexpr int64_t flops = 1;
  static constexpr InputRule input = InputRule::IntToFloat;
  template <class C> static C f(C x) { return std::sin(x); }
  static constexpr UnaryReads reads{.x = true, .out = false};
  static Tensor grad(const Tensor& g, const Tensor& x, const Tensor&) { return g * cos(x); }
};
struct CosDef {
  static constexpr std::string_view name = "cos";
  static constexpr std::string_view reference = "torch.cos";
  static constexpr std::string_view domain = "normal";
  static constexpr int64_t flops = 1;
  static constexpr InputRule input = InputRule::IntToFloat;
  template <class C> static C f(C x) { return std::cos(x); }
  static constexpr UnaryReads reads{.x = true, .out = false};
  static Tensor grad(const Tensor& g, const Tensor& x, const Tensor&) { return -(g * sin(x)); }
};
struct Expm1Def {
  static constexpr std::string_view name = "expm1";
  static constexpr std::string_view reference = "torch.expm1";
  static constexpr std::string_view domain = "normal";
  static constexpr int64_t flops = 2;  // exp, −1 (one call, counted as its two steps, as log1p)
  static constexpr InputRule input = InputRule::IntToFloat;
  template <class C> static C f(C x) { return std::expm1(x); }
  // d (eˣ − 1) = eˣ = out + 1
  static constexpr UnaryReads reads{.x = false, .out = true};
  static Tensor grad(const Tensor& g, const Tensor&, const Tensor& out) { return g * (out + 1); }
};
/// log2 and log10: ln x scaled, so each counts two steps, as log1p; d log_b x = 1 / (x · ln b).
template <class Base>
struct LogBaseDef {
  static constexpr std::string_view name = Base::name;
  static constexpr std::string_view reference = Base::reference;
  static constexpr std::string_view domain = "positive";
  static constexpr int64_t flops = 2;
  static constexpr InputRule input = InputRule::IntToFloat;
  template <class C> static C f(C x) { return Base::log(x); }
  static constexpr UnaryReads reads{.x = true, .out = false};
  static Tensor grad(const Tensor& g, const Tensor& x, const Tensor&) { return g / (x * Base::ln_base); }
};
struct Base2 {
  static constexpr std::string_view name = "log2", reference = "torch.log2";
  static constexpr double ln_base = M_LN2;
  template <class C> static C log(C x) { return std::log2(x); }
};
struct Base10 {
  static constexpr std::string_view name = "log10", reference = "torch.log10";
  static constexpr double ln_base = M_LN10;
  template <class C> static C log(C x) { return std::log10(x); }
};
using Log2Def = LogBaseDef<Base2>;
using Log10Def = LogBaseDef<Base10>;
struct ReciprocalDef {
  static constexpr std::string_view name = "reciprocal";
  static constexpr std::string_view reference = "torch.reciprocal";
  static constexpr std::string_view domain = "positive";
  static constexpr int64_t flops = 1;
  static constexpr InputRule input = InputRule::IntToFloat;
  template <class C> static C f(C x) { return C(1) / x; }
  // d x⁻¹ = −x⁻² = −out²
  static constexpr UnaryReads reads{.x = false, .out = true};
  static Tensor grad(const Tensor& g, const Tensor&, const Tensor& out) { return -(g * out * out); }
};

/// Rounding to a whole number: integers are whole already and come back as they are (PyTorch
/// takes every dtype but bool), and the gradient is zero wherever it exists, as PyTorch's.
template <class Rule>
struct WholeNumberDef {
  static constexpr std::string_view name = Rule::name;
  static constexpr std::string_view reference = Rule::reference;
  static constexpr std::string_view domain = "normal";
  static constexpr int64_t flops = 1;
  static constexpr InputRule input = InputRule::NoBool;
  template <class C> static C f(C x) {
    if constexpr (std::is_floating_point_v<C>) return Rule::whole(x);
    else return x;
  }
  static constexpr UnaryReads reads{.x = false, .out = false};
  static Tensor grad(const Tensor& g, const Tensor&, const Tensor&) { return zeros_like(g); }
};
struct FloorRule {
  static constexpr std::string_view name = "floor", reference = "torch.floor";
  template <class C> static C whole(C x) { return std::floor(x); }
};
struct CeilRule {
  static constexpr std::string_view name = "ceil", reference = "torch.ceil";
  template <class C> static C whole(C x) { return std::ceil(x); }
};
struct RoundRule {  // halves to even, as torch.round (nearbyint in the default rounding mode)
  static constexpr std::string_view name = "round", reference = "torch.round";
  template <class C> static C whole(C x) { return std::nearbyint(x); }
};
struct TruncRule {
  static constexpr std::string_view name = "trunc", reference = "torch.trunc";
  template <class C> static C whole(C x) { return std::trunc(x); }
};
using FloorDef = WholeNumberDef<FloorRule>;
using CeilDef = WholeNumberDef<CeilRule>;
using RoundDef = WholeNumberDef<RoundRule>;
using TruncDef = WholeNumberDef<TruncRule>;

struct SignDef {
  static constexpr std::string_view name = "sign";
  static constexpr std::string_view reference = "torch.sign";
  static constexpr std::string_view domain = "normal";
  static constexpr int64_t flops = 1;
  static constexpr InputRule input = InputRule::Any;
  // (0 < x) − (x < 0), as PyTorch's: 0 for ±0 and for NaN; a bool is its own sign.
  template <class C> static C f(C x) {
    if constexpr (std::is_same_v<C, bool>) return x;
    else return static_cast<C>(static_cast<int>(C(0) < x) - static_cast<int>(x < C(0)));
  }
  static constexpr UnaryReads reads{.x = false, .out = false};
  static Tensor grad(const Tensor& g, const Tensor&, const Tensor&) { return zeros_like(g); }
};
struct ReluDef {
  static constexpr std::string_view name = "relu";
  static constexpr std::string_view reference = "torch.relu";
  static constexpr std::string_view domain = "normal";
  static constexpr auto cuda_op = kernels::cuda::UnaryOp::Relu;
  static constexpr int64_t flops = 1;
  static constexpr InputRule input = InputRule::NoBool;
  template <class C> static C f(C x) {
    if constexpr (std::is_floating_point_v<C>) {
      if (std::isnan(x)) return x;
    }
    return x > C(0) ? x : C(0);
  }
  // max returns x for a NaN, and −0 for −0, which + 0 makes the scalar form's +0.
  static kernels::Vec16f vec(kernels::Vec16f x) { return kernels::add(kernels::max(kernels::splat(0.0f), x), kernels::splat(0.0f)); }
  // From the output, as torch's threshold_backward(grad, result, 0): the same mask (out > 0 where
  // x > 0; a NaN or −0 gives 0 either way), and the input is not kept for it, which the next op
  // (a Linear saves its input, the output here) may already keep.
  static constexpr UnaryReads reads{.x = false, .out = true};
  static Tensor grad(const Tensor& g, const Tensor&, const Tensor& out) { return g * (out > 0).to(g.dtype()); }
};
struct SquareDef {
  static constexpr std::string_view name = "square";
  static constexpr std::string_view reference = "torch.square";
  static constexpr std::string_view domain = "normal";
  static constexpr auto cuda_op = kernels::cuda::UnaryOp::Square;
  static constexpr int64_t flops = 1;
  static constexpr InputRule input = InputRule::BoolToLong;
  template <class C> static C f(C x) { return static_cast<C>(x * x); }
  static constexpr UnaryReads reads{.x = true, .out = false};
  static Tensor grad(const Tensor& g, const Tensor& x, const Tensor&) { return g * 2 * x; }
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

struct GeluErfDef {
  static constexpr std::string_view name = "gelu";
  static constexpr auto cuda_op = kernels::cuda::UnaryOp::GeluErf;
  static constexpr int64_t flops = 5;  // x/√2, erf, +1, ×x, ×0.5
  static constexpr InputRule input = InputRule::FloatOnly;
  template <class C> static C f(C x) { return x * normal_cdf(x); }
  static kernels::Vec16f vec(kernels::Vec16f x) { return kernels::mul(x, normal_cdf(x)); }
  // d x·Φ(x) = Φ(x) + x·φ(x): gelu_backward above.
  static constexpr UnaryReads reads{.x = true, .out = false};
  static Tensor grad(const Tensor& g, const Tensor& x, const Tensor&) { return ops::apply<GeluBackward>(g.to(x.dtype()), x); }

};
struct GeluTanhDef {
  static constexpr std::string_view name = "gelu";
  static constexpr auto cuda_op = kernels::cuda::UnaryOp::GeluTanh;
  static constexpr int64_t flops = 9;  // x³ (2), ×0.044715, +x, ×√(2/π), tanh, +1, ×x, ×0.5
  static constexpr InputRule input = InputRule::FloatOnly;
  template <class C> static C f(C x) {
    const C inner = C(0.7978845608028654) * (x + C(0.044715) * x * x * x);
    return C(0.5) * x * (C(1) + std::tanh(inner));
  }
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
      TALLY_CHECK_TYPE_ERROR(in != kBool, "\"", Def::name, "\" not implemented for 'Bool': boolean inputs are not supported");
      return in;
    case InputRule::IntToFloat: return is_floating_point(in) ? in : kFloat32;
    case InputRule::FloatOnly:
      TALLY_CHECK_TYPE_ERROR(is_floating_point(in), "\"", Def::name, "\" not implemented for '", dtype_name(in),
                             "': floating-point input required");
      return in;
    case InputRule::BoolToLong: return in == kBool ? kInt64 : in;
  }
  return in;
}

template <class Def>
struct Unary {
  static constexpr std::string_view name = Def::name;
  static constexpr bool supports_cuda = requires { Def::cuda_op; };  // a Def without a CUDA kernel refuses GPU tensors
  static constexpr bool elementwise = true;
  static ops::OutputSpec meta(const Tensor& x) {
    const Dtype dt = unary_result_dtype<Def>(x.dtype());
    check_arith(dt, Def::name);
    return {DimVector(x.sizes()), dt};
  }
  static void compute(const Tensor& out, const Tensor& x) {
    const Dtype dt = out.dtype();
    Tensor in = x.to(dt);
    if constexpr (supports_cuda) {
      if (out.is_cuda()) return kernels::cuda::unary(Def::cuda_op, ops::cuda_launch<2>(out, {&in}));
    }
    cpu_kernels().run<&Unary::kernel>(ops::make_loop<2>(out, {&in}), dt);
  }
  /// The CPU loop, built once per target (Note [CPU kernel dispatch]).
  static void kernel(const kernels::StridedLoop<2>& loop, Dtype dt) {
    dispatch(dt, Def::name, [&]<class T>() {
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
Tensor neg(const Tensor& x) { return ops::apply<Unary<NegDef>>(x); }
Tensor abs(const Tensor& x) { return ops::apply<Unary<AbsDef>>(x); }
Tensor sqrt(const Tensor& x) { return ops::apply<Unary<SqrtDef>>(x); }
Tensor rsqrt(const Tensor& x) { return ops::apply<Unary<RsqrtDef>>(x); }
Tensor exp(const Tensor& x) { return ops::apply<Unary<ExpDef>>(x); }
Tensor log(const Tensor& x) { return ops::apply<Unary<LogDef>>(x); }
Tensor tanh(const Tensor& x) { return ops::apply<Unary<TanhDef>>(x); }
Tensor sigmoid(const Tensor& x) { return ops::apply<Unary<SigmoidDef>>(x); }
Tensor relu(const Tensor& x) { return ops::apply<Unary<ReluDef>>(x); }
Tensor silu(const Tensor& x) { return ops::apply<Unary<SiluDef>>(x); }
Tensor square(const Tensor& x) { return ops::apply<Unary<SquareDef>>(x); }
Tensor erf(const Tensor& x) { return ops::apply<Unary<ErfDef>>(x); }
Tensor softplus(const Tensor& x) { return ops::apply<Unary<SoftplusDef>>(x); }
Tensor log1p(const Tensor& x) { return ops::apply<Unary<Log1pDef>>(x); }
Tensor sin(const Tensor& x) { return ops::apply<Unary<SinDef>>(x); }
Tensor cos(const Tensor& x) { return ops::apply<Unary<CosDef>>(x); }
Tensor expm1(const Tensor& x) { return ops::apply<Unary<Expm1Def>>(x); }
Tensor log2(const Tensor& x) { return ops::apply<Unary<Log2Def>>(x); }
Tensor log10(const Tensor& x) { return ops::apply<Unary<Log10Def>>(x); }
Tensor reciprocal(const Tensor& x) { return ops::apply<Unary<ReciprocalDef>>(x); }
Tensor floor(const Tensor& x) { return ops::apply<Unary<FloorDef>>(x); }
Tensor ceil(const Tensor& x) { return ops::apply<Unary<CeilDef>>(x); }
Tensor round(const Tensor& x) { return ops::apply<Unary<RoundDef>>(x); }
Tensor trunc(const Tensor& x) { return ops::apply<Unary<TruncDef>>(x); }
Tensor sign(const Tensor& x) { return ops::apply<Unary<SignDef>>(x); }
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

namespace {
template <class Def>
ops::UnaryOpInfo info(Tensor (*fn)(const Tensor&)) {
  return {Def::name, Def::reference, Def::domain, Def::flops, Def::input == InputRule::FloatOnly, requires { &Def::grad; }, fn};
}
}  // namespace

const std::vector<ops::UnaryOpInfo>& ops::unary_ops() {
  static const std::vector<UnaryOpInfo> table = {
      info<NegDef>(neg),         info<AbsDef>(abs),   info<SqrtDef>(sqrt), info<RsqrtDef>(rsqrt), info<ExpDef>(exp),
      info<LogDef>(log),         info<TanhDef>(tanh), info<SigmoidDef>(sigmoid), info<SiluDef>(silu), info<ErfDef>(erf),
      info<ReluDef>(relu),       info<SquareDef>(square), info<SoftplusDef>(softplus), info<Log1pDef>(log1p),
      info<SinDef>(sin),         info<CosDef>(cos),   info<Expm1Def>(expm1), info<Log2Def>(log2), info<Log10Def>(log10),
      info<ReciprocalDef>(reciprocal), info<FloorDef>(floor), info<CeilDef>(ceil), info<RoundDef>(round), info<TruncDef>(trunc),
      info<SignDef>(sign),
  };
  return table;
}

Tensor& neg_out(Tensor& out, const Tensor& x) { return ops::apply_out<Unary<NegDef>>(out, x); }
Tensor& abs_out(Tensor& out, const Tensor& x) { return ops::apply_out<Unary<AbsDef>>(out, x); }
Tensor& sqrt_out(Tensor& out, const Tensor& x) { return ops::apply_out<Unary<SqrtDef>>(out, x); }
Tensor& rsqrt_out(Tensor& out, const Tensor& x) { return ops::apply_out<Unary<RsqrtDef>>(out, x); }
Tensor& exp_out(Tensor& out, const Tensor& x) { return ops::apply_out<Unary<ExpDef>>(out, x); }
Tensor& log_out(Tensor& out, const Tensor& x) { return ops::apply_out<Unary<LogDef>>(out, x); }
Tensor& tanh_out(Tensor& out, const Tensor& x) { return ops::apply_out<Unary<TanhDef>>(out, x); }
Tensor& sigmoid_out(Tensor& out, const Tensor& x) { return ops::apply_out<Unary<SigmoidDef>>(out, x); }
Tensor& erf_out(Tensor& out, const Tensor& x) { return ops::apply_out<Unary<ErfDef>>(out, x); }
Tensor& clamp_out(Tensor& out, const Tensor& x, std::optional<Scalar> min, std::optional<Scalar> max) {
  return ops::apply_out<Clamp>(out, x, min, max);
}
Tensor& Tensor::sqrt_() { return ops::apply_inplace<Unary<SqrtDef>>(*this); }
Tensor& Tensor::rsqrt_() { return ops::apply_inplace<Unary<RsqrtDef>>(*this); }
Tensor& Tensor::exp_() { return ops::apply_inplace<Unary<ExpDef>>(*this); }
Tensor& Tensor::log_() { return ops::apply_inplace<Unary<LogDef>>(*this); }
Tensor& Tensor::neg_() { return ops::apply_inplace<Unary<NegDef>>(*this); }
Tensor& Tensor::abs_() { return ops::apply_inplace<Unary<AbsDef>>(*this); }
Tensor& Tensor::tanh_() { return ops::apply_inplace<Unary<TanhDef>>(*this); }
Tensor& Tensor::sigmoid_() { return ops::apply_inplace<Unary<SigmoidDef>>(*this); }
Tensor& Tensor::relu_() { return ops::apply_inplace<Unary<ReluDef>>(*this); }
Tensor& Tensor::square_() { return ops::apply_inplace<Unary<SquareDef>>(*this); }
Tensor& Tensor::erf_() { return ops::apply_inplace<Unary<ErfDef>>(*this); }
Tensor& Tensor::clamp_(std::optional<Scalar> min, std::optional<Scalar> max) { return ops::apply_inplace<Clamp>(*this, min, max); }
Tensor& Tensor::pow_(Scalar exponent) { return ops::apply_inplace<PowScalar>(*this, exponent); }

Tensor Tensor::pow(Scalar exponent) const { return tally::pow(*this, exponent); }
Tensor Tensor::sqrt() const { return tally::sqrt(*this); }
Tensor Tensor::rsqrt() const { return tally::rsqrt(*this); }
Tensor Tensor::exp() const { return tally::exp(*this); }
Tensor Tensor::sin() const { return tally::sin(*this); }
Tensor Tensor::cos() const { return tally::cos(*this); }
Tensor Tensor::expm1() const { return tally::expm1(*this); }
Tensor Tensor::log1p() const { return tally::log1p(*this); }
Tensor Tensor::log2() const { return tally::log2(*this); }
Tensor Tensor::log10() const { return tally::log10(*this); }
Tensor Tensor::reciprocal() const { return tally::reciprocal(*this); }
Tensor Tensor::floor() const { return tally::floor(*this); }
Tensor Tensor::ceil() const { return tally::ceil(*this); }
Tensor Tensor::round() const { return tally::round(*this); }
Tensor Tensor::trunc() const { return tally::trunc(*this); }
Tensor Tensor::sign() const { return tally::sign(*this); }
Tensor Tensor::log() const { return tally::log(*this); }
Tensor Tensor::neg() const { return tally::neg(*this); }
Tensor Tensor::abs() const { return tally::abs(*this); }
Tensor Tensor::tanh() const { return tally::tanh(*this); }
Tensor Tensor::sigmoid() const { return tally::sigmoid(*this); }
Tensor Tensor::relu() const { return tally::relu(*this); }
Tensor Tensor::square() const { return tally::square(*this); }
Tensor Tensor::clamp(std::optional<Scalar> min, std::optional<Scalar> max) const { return tally::clamp(*this, min, max); }
#endif  // TALLY_PRIMARY_PASS

}  // namespace tally

TALLY_CPU_KERNELS(unary, &Unary<NegDef>::kernel, &Unary<AbsDef>::kernel, &Unary<SqrtDef>::kernel, &Unary<RsqrtDef>::kernel,
                  &Unary<ExpDef>::kernel, &Unary<LogDef>::kernel, &Unary<TanhDef>::kernel, &Unary<SigmoidDef>::kernel,
                  &Unary<SiluDef>::kernel, &Unary<ErfDef>::kernel, &Unary<SoftplusDef>::kernel, &Unary<Log1pDef>::kernel,
                  &Unary<ReluDef>::kernel, &Unary<SquareDef>::kernel, &Unary<GeluErfDef>::kernel, &Unary<GeluTanhDef>::kernel,
                  &Unary<SinDef>::kernel, &Unary<CosDef>::kernel, &Unary<Expm1Def>::kernel, &Unary<Log2Def>::kernel,
                  &Unary<Log10Def>::kernel, &Unary<ReciprocalDef>::kernel, &Unary<FloorDef>::kernel, &Unary<CeilDef>::kernel,
                  &Unary<RoundDef>::kernel, &Unary<TruncDef>::kernel, &Unary<SignDef>::kernel, &GeluBackward::kernel,
                  &PowScalar::kernel, &Clamp::kernel)
