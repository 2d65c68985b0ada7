#pragma once
// FP8 linear layers, as NVIDIA Transformer Engine trains them: in y = x·Wᵀ + b the input and the
// weight are cast to E4M3 and, in backward, the output's gradient to E5M2, each with its own
// per-tensor scale from delayed scaling (fp8_scaling.h); the products multiply the FP8 values and
// apply the inverse scales to the result (scaled_mm). On a CPU the FP8 operands are widened
// exactly (every E4M3 and E5M2 value is a bfloat16) and multiplied on the CPU's fastest bfloat16
// path where the result is bfloat16 (under autocast), in float32 where it is float32. The float32
// weight stays the master copy; its gradient comes back in float32.
//
//   amp::convert_to_fp8(model);            // every nn::Linear in the model computes in FP8
//   model.loss(x, y).backward();           // scales follow the amaxes from step to step
//   StateDict s = amp::fp8_state_dict(model);  // the scales and histories, for a checkpoint
//
// Scales are delayed: a forward first updates the layer's three scales from the amaxes recorded
// by its earlier forwards and backwards (Transformer Engine updates them at the same point of the
// step), then casts with them and records the new amaxes. The node of an FP8 product keeps the
// FP8 copies (1 byte an element) for backward, not the float32 or bfloat16 originals.

#include <cstdint>

#include "tally/amp/fp8_scaling.h"
#include "tally/core/ordered_dict.h"
#include "tally/core/tensor.h"
#include "tally/nn/linear.h"

namespace tally::amp {

/// One FP8 linear layer's scaling state; as the layer's product, it runs fp8_linear.
struct Fp8LinearState final : nn::LinearProduct {
  explicit Fp8LinearState(DelayedScalingOptions options = {});
  Tensor forward(const Tensor& x, const Tensor& weight, const Tensor& bias) override;
  DelayedScaling input;        ///< E4M3
  DelayedScaling weight;       ///< E4M3
  DelayedScaling grad_output;  ///< E5M2
  int64_t forwards = 0;        ///< forwards run: the first has no amaxes to update from
  /// "input.scale", "input.amax_history", and likewise "weight." and "grad_output.", and
  /// "forwards" (int64 0-d).
  StateDict state_dict() const;
  /// Restore state_dict(), strictly (ValueError naming a missing or unexpected key).
  void load_state_dict(const StateDict& state);
};

/// x·Wᵀ + b (W [out, in], b [out] or undefined) through FP8 with `state`'s scales (the note
/// above). The result has x's dtype, or the autocast dtype inside an amp::AutocastGuard; the graph
/// node refers to `state`, which must outlive the backward.
Tensor fp8_linear(const Tensor& x, const Tensor& weight, const Tensor& bias, Fp8LinearState& state);

/// Give every nn::Linear in `module` (itself included) an FP8 state, so that its forward runs
/// fp8_linear. Returns how many layers were converted.
int64_t convert_to_fp8(nn::Module& module, DelayedScalingOptions options = {});
/// The FP8 states of `module`'s converted layers, keyed "<layer path>.<state key>".
StateDict fp8_state_dict(nn::Module& module);
/// Restore fp8_state_dict() into the converted layers of `module`, strictly.
void load_fp8_state_dict(nn::Module& module, const StateDict& state);

}  // namespace tally::amp
