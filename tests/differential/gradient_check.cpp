// Gradients are compared like accumulating results (absolute tolerance scaled by the largest
// |grad|): every broadcast, expand or reduction in the forward is a sum in the backward, and torch's
// fused backward kernels round differently from tally's rules composed of public ops.
//
// Backward runs twice: from the upstream gradient as reference.py saved it (contiguous), then from
// the same values in a strided tensor, because in real graphs the gradient reaching a node is often
// a view (a transpose's or expand's backward) and a rule must not assume contiguous memory.

#include "differential/gradient_check.h"

#include "differential/compare.h"
#include "differential/npy_tensor.h"

namespace tally::difftest {
namespace {

// The values of `t` in a non-contiguous tensor: every other element of a buffer twice as long in
// the last dim (a 0-d tensor has no layout to vary and is returned as is).
Tensor strided_copy(const Tensor& t) {
  if (t.dim() == 0) return t;
  std::vector<int64_t> wide = t.sizes().vec();
  wide.back() *= 2;
  Tensor out = zeros(wide, t.options()).slice(-1, 0, std::nullopt, 2);
  out.copy_(t);
  return out;
}

// Runs backward from `upstream` into freshly cleared gradients and compares each base's grad.
std::optional<std::string> backward_and_compare(const ReferencedCase& rc, const std::string& dir,
                                                const std::vector<Tensor>& bases, const Tensor& out,
                                                const Tensor& upstream, bool retain_graph) {
  for (Tensor b : bases) b.set_grad(Tensor());  // a handle copy: the same tensor
  try {
    out.backward(upstream, retain_graph);
  } catch (const Error& e) {
    return "tally backward raised \"" + std::string(e.what()) + "\"";
  }
  const nlohmann::json& want = rc.result.at("grads");
  for (size_t k = 0; k < bases.size(); ++k) {
    const std::string input = "input " + std::to_string(k);
    const Tensor& got = bases[k].grad();
    if (want[k].is_null()) {
      // Inputs that do not require grad (masks, indices, frozen operands) must stay without one.
      if (got.defined()) return "grad of " + input + ": tally has one, torch none";
      continue;
    }
    if (!got.defined()) return "grad of " + input + ": torch has one, tally none";
    const Dtype want_dtype = dtype_from_name(want[k].at("dtype").get<std::string>());
    const NpyArray expected = load_npy(dir, rc.id + "_grad" + std::to_string(k) + ".npy", want_dtype);
    if (auto why = compare(got, expected, want_dtype, /*accumulates=*/true, /*exact_values=*/false))
      return "grad of " + input + ": " + *why +
             (rc.result.at("status") == "upcast" ? " [reference: float32 math rounded to the half type]" : "");
  }
  return std::nullopt;
}

}  // namespace

std::optional<std::string> check_gradients(const ReferencedCase& rc, const std::string& dir,
                                           const std::vector<Tensor>& bases, const std::vector<Tensor>& outs) {
  const nlohmann::json& want = rc.result.at("grads");
  if (want.size() != bases.size()) return "reference.py saved " + std::to_string(want.size()) + " gradients for " +
                                          std::to_string(bases.size()) + " inputs";
  if (outs.empty() || !outs[0].requires_grad()) return "tally's output 0 does not require grad";
  const Tensor upstream = to_tensor(load_npy(dir, rc.id + "_gout0.npy", outs[0].dtype()), outs[0].dtype()).to(outs[0].device());
  if (auto why = backward_and_compare(rc, dir, bases, outs[0], upstream, /*retain_graph=*/true)) return *why;
  if (auto why = backward_and_compare(rc, dir, bases, outs[0], strided_copy(upstream), /*retain_graph=*/false))
    return "with a strided upstream gradient: " + *why;
  return std::nullopt;
}

}  // namespace tally::difftest
