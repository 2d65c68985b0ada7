#include "tally/amp/fp8_linear.h"

#include "tally/accounting/memory_tracker.h"
#include "tally/amp/autocast.h"
#include "tally/core/autograd_meta.h"
#include "tally/core/geometry.h"
#include "tally/error/error.h"
#include "tally/ops/apply.h"
#include "tally/ops/creation.h"
#include "tally/ops/elementwise.h"
#include "tally/ops/matmul.h"

namespace tally::amp {

namespace {

// On the operands' device: a meta run then counts it as the real run does.
Tensor scale_tensor(double s, Device device) { return scalar_tensor(s, TensorOptions(kFloat32).device(device)); }

// The FP8 product of a linear layer as one op, so that its node keeps the FP8 copies (xq, wq)
// and its backward casts the incoming gradient to E5M2 with the layer's own scale. x and w are
// arguments only so that autograd routes their gradients: the rule never reads their values.
struct Fp8Matmul {
  static constexpr std::string_view name = "fp8_linear";
  static constexpr bool forward_on_meta = true;
  static constexpr bool supports_cuda = true;  // its forward is scaled_mm, which runs on either device
  static Tensor forward(const Tensor&, const Tensor&, const Tensor& xq, const Tensor& wq, double x_inv, double w_inv, Dtype out,
                        DelayedScaling*) {
    return scaled_mm(xq, wq.t(), scale_tensor(x_inv, xq.device()), scale_tensor(w_inv, xq.device()), out);
  }
  static ops::Cost cost(const Tensor& out, const Tensor&, const Tensor&, const Tensor& xq, const Tensor& wq, double, double, Dtype,
                        DelayedScaling*) {
    return {2 * out.numel() * xq.size(1), xq.nbytes() + wq.nbytes(), out.nbytes()};
  }
  static ops::SavedTensors saved(const SmallVector<bool, 4>&) { return {{false, false, true, true}, false}; }
  static TensorList backward(const ops::BackwardContext& c, const Tensor& x, const Tensor& w, const Tensor& xq, const Tensor& wq, double x_inv,
                             double w_inv, Dtype, DelayedScaling* grad_scaling) {
    const Tensor gq = grad_scaling->quantize(c.grad);
    const Tensor g_inv = scale_tensor(grad_scaling->scale_inv(), gq.device());
    TensorList grads(4);
    if (c.needs_grad(0)) grads[0] = scaled_mm(gq, wq, g_inv, scale_tensor(w_inv, gq.device()), x.dtype());
    if (c.needs_grad(1)) grads[1] = scaled_mm(gq.t(), xq, g_inv, scale_tensor(x_inv, gq.device()), w.dtype());
    return grads;
  }
};

/// A layer's key in fp8_state_dict: "<layer path>.<key>" ("<key>" for the module itself).
std::string state_key(const std::string& path, const std::string& key) { return path.empty() ? key : path + "." + key; }

}  // namespace

Fp8LinearState::Fp8LinearState(DelayedScalingOptions options)
    : input(kFloat8_e4m3fn, options), weight(kFloat8_e4m3fn, options), grad_output(kFloat8_e5m2, options) {}

StateDict Fp8LinearState::state_dict() const {
  StateDict s("fp8 state key");
  for (const auto& [prefix, scaling] : {std::pair{"input.", &input}, {"weight.", &weight}, {"grad_output.", &grad_output}})
    for (const auto& [k, t] : scaling->state_dict()) s.insert(std::string(prefix).append(k), t);
  s.insert("forwards", scalar_tensor(forwards, TensorOptions(kInt64)));
  return s;
}

void Fp8LinearState::load_state_dict(const StateDict& state) {
  TALLY_CHECK(state.size() == 7 && state.contains("forwards"), "Fp8LinearState.load_state_dict: expected the keys input.*, weight.*, ",
              "grad_output.* (scale, amax_history) and forwards; got ", state.size(), " keys");
  for (const auto& [prefix, scaling] : {std::pair{std::string("input."), &input}, {"weight.", &weight}, {"grad_output.", &grad_output}})
    scaling->load_state_dict(with_prefix_removed(state, prefix));
  forwards = state.at("forwards").item<int64_t>();
}

Tensor fp8_linear(const Tensor& x, const Tensor& weight, const Tensor& bias, Fp8LinearState& state) {
  TALLY_CHECK(weight.dim() == 2 && x.dim() >= 1 && x.size(-1) == weight.size(1), "fp8_linear: input of shape ", x.sizes(),
              " does not fit weight of shape ", weight.sizes(), " (expected input [..., ", weight.dim() == 2 ? weight.size(1) : -1, "])");
  const Dtype out = autocast_dtype().value_or(x.dtype());  // scaled_mm refuses what it cannot return
  const ops::AutocastRegion region("fp8_linear", {});  // the casts below are this layer's own
  if (state.forwards++ > 0) {
    state.input.update();
    state.weight.update();
    state.grad_output.update();
  }
  const Tensor x2d = x.reshape(geometry::fold_leading_dims(x.sizes(), 1));
  Tensor xq, wq;
  {
    NoGradGuard no_grad;  // the FP8 copies are values; gradients flow through the product's own rule
    xq = state.input.quantize(x2d);
    wq = state.weight.quantize(weight);
  }
  // The FP8 weight is this step's working copy of the float32 master (the FP8 input, which the
  // node keeps, counts as an activation).
  if (wq.storage()) accounting::set_memory_category(wq, MemoryCategory::WorkingCopies);
  Tensor y = ops::apply<Fp8Matmul>(x2d, weight, xq, wq, state.input.scale_inv(), state.weight.scale_inv(), out, &state.grad_output);
  DimVector sizes(x.sizes());
  sizes.back() = weight.size(0);
  y = y.view(sizes);
  return bias.defined() ? y + bias.to(out) : y;
}

Tensor Fp8LinearState::forward(const Tensor& x, const Tensor& weight, const Tensor& bias) { return fp8_linear(x, weight, bias, *this); }

namespace {
/// The FP8 state of a converted layer, or null.
Fp8LinearState* fp8_state(nn::Module* m) {
  auto* linear = dynamic_cast<nn::Linear*>(m);
  return linear ? dynamic_cast<Fp8LinearState*>(linear->product.get()) : nullptr;
}
}  // namespace

int64_t convert_to_fp8(nn::Module& module, DelayedScalingOptions options) {
  int64_t n = 0;
  for (const auto& [path, m] : module.named_modules()) {
    if (auto* linear = dynamic_cast<nn::Linear*>(m)) {
      linear->product = std::make_shared<Fp8LinearState>(options);
      ++n;
    }
  }
  return n;
}

StateDict fp8_state_dict(nn::Module& module) {
  StateDict s("fp8 state key");
  for (const auto& [path, m] : module.named_modules()) {
    const Fp8LinearState* fp8 = fp8_state(m);
    if (!fp8) continue;
    for (const auto& [k, t] : fp8->state_dict()) s.insert(state_key(path, k), t);
  }
  return s;
}

void load_fp8_state_dict(nn::Module& module, const StateDict& state) {
  int64_t used = 0;
  for (const auto& [path, m] : module.named_modules()) {
    Fp8LinearState* fp8 = fp8_state(m);
    if (!fp8) continue;
    const StateDict part = with_prefix_removed(state, state_key(path, ""));
    TALLY_CHECK(!part.empty(), "load_fp8_state_dict: no FP8 state for layer '", path, "'");
    fp8->load_state_dict(part);
    used += static_cast<int64_t>(part.size());
  }
  TALLY_CHECK(used == static_cast<int64_t>(state.size()), "load_fp8_state_dict: ", static_cast<int64_t>(state.size()) - used,
              " key(s) belong to no FP8 layer of this model");
}

}  // namespace tally::amp
