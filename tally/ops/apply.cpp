#include "tally/ops/apply.h"

#include <cctype>
#include <mutex>
#include <set>

namespace tally::ops {

namespace detail {
thread_local OpObserver* tls_observer = nullptr;
thread_local int tls_op_depth = 0;
}  // namespace detail

std::string detail::backward_node_name(std::string_view op) {
  std::string n;
  bool upper = true;
  for (char c : op) {
    if (c == '_') { upper = true; continue; }
    n += upper ? static_cast<char>(std::toupper(static_cast<unsigned char>(c))) : c;
    upper = false;
  }
  return n + "Backward0";
}

namespace {
std::string describe(const Tensor& t) {
  return ::tally::detail::str_cat("a ", dtype_name(t.dtype()), " tensor of shape ", t.sizes());
}
}  // namespace

Device common_device(std::span<const Tensor* const> tensors) {
  Device device(kCPU);
  const Tensor* first = nullptr;
  for (const Tensor* t : tensors) {
    if (!t->defined()) continue;
    const Device d = t->device();
    if (d.is_cpu() && t->dim() == 0) continue;  // a wrapped number joins any device
    if (!first) {
      first = t;
      device = d;
    } else if (d != device) {
      // PyTorch names the devices in this order: the GPU one first.
      const Device a = device.is_cuda() ? device : d, b = device.is_cuda() ? d : device;
      throw DeviceError(::tally::detail::str_cat("Expected all tensors to be on the same device, but found at least two devices, ",
                                                 a.str(), " and ", b.str(), "!"));
    }
  }
  return device;
}

void detail::raise_no_cuda_kernel(std::string_view op) {
  throw NotImplementedError(::tally::detail::str_cat("Could not run '", op, "' with arguments from the 'CUDA' backend: tally has "
                                                     "no CUDA kernel for it yet; move the tensors to the CPU with .cpu() first"));
}

void detail::check_saved_version(const Tensor& t, uint64_t saved, const Node& node, const char* role, size_t index) {
  const uint64_t now = version_of(t);
  if (now == saved) return;
  throw ValueError(::tally::detail::str_cat(
      "one of the variables needed for gradient computation has been modified by an inplace operation: ", describe(t),
      ", ", role, " ", index, " of ", node.name(), ", is at version ", now, "; expected version ", saved,
      " instead. Write the new values to a fresh tensor (the out-of-place op), or run backward before the in-place op"));
}

void detail::refuse_inplace_in_graph(std::string_view op_name, const Tensor& self, const SmallVector<const Tensor*, 4>& operands) {
  // In-place binary ops share their out-of-place form's name ("add"); the user called "add_".
  const std::string op = op_name.ends_with('_') ? std::string(op_name) : std::string(op_name) + "_";
  if (self.requires_grad()) {
    TALLY_CHECK(!self.is_leaf(), "a leaf Variable that requires grad is being used in an in-place operation (", op,
                "). Wrap the update in tally::NoGradGuard.");
    throw NotImplementedError(::tally::detail::str_cat(
        "in-place ", op, " on a tensor that is part of an autograd graph (", describe(self), ", grad_fn ",
        self.grad_fn()->name(), ") is not supported; use the out-of-place op"));
  }
  for (const Tensor* t : operands) {
    if (!t->defined() || !t->requires_grad()) continue;
    throw NotImplementedError(::tally::detail::str_cat(
        "in-place ", op, " writes ", describe(self), " that does not require grad from an operand that does (",
        describe(*t), "): its gradient cannot be recorded in place; use the out-of-place op (y = x + w, not x += w)"));
  }
}

namespace {
std::mutex& registry_mutex() {
  static std::mutex m;
  return m;
}
std::set<std::string>& registry() {
  static std::set<std::string> names;
  return names;
}
}  // namespace

void detail::register_differentiable(std::string_view name) {
  std::lock_guard lock(registry_mutex());
  registry().emplace(name);
}

std::vector<std::string> differentiable_ops() {
  std::lock_guard lock(registry_mutex());
  return {registry().begin(), registry().end()};
}

OpObserver* set_op_observer(OpObserver* observer) {
  OpObserver* previous = detail::tls_observer;
  detail::tls_observer = observer;
  return previous;
}

}  // namespace tally::ops
