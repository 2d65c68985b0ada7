#include "tally/ops/apply.h"

#include <cctype>
#include <mutex>
#include <set>
#include <utility>

#include "tally/core/geometry.h"
#include "tally/error/warning.h"

namespace tally::ops {

namespace detail {
thread_local OpObserver* tls_observer = nullptr;
thread_local AutocastHook* tls_autocast = nullptr;
thread_local bool tls_autocast_done = false;
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

void detail::raise_no_meta_rule(std::string_view op) {
  throw NotImplementedError(::tally::detail::str_cat("Could not run '", op, "' with arguments from the 'Meta' backend: it has "
                                                     "no meta step (its output depends on values a meta tensor does not have)"));
}

void detail::raise_no_double_backward(std::string_view op) {
  throw NotImplementedError(::tally::detail::str_cat(
      "double backward through ", op, ": a backward rule with create_graph=true called ", op,
      ", which has no backward rule of its own, so the second derivative cannot be recorded"));
}

void detail::refuse_out_in_graph(std::string_view op) {
  throw NotImplementedError(::tally::detail::str_cat(op, "(): functions with out=... arguments don't support automatic "
                                                     "differentiation, but one of the arguments requires grad."));
}

namespace {
/// PyTorch's canCast: no floating result into an integer tensor, nothing but bool into a bool one.
bool can_cast(Dtype from, Dtype to) {
  if (is_floating_point(from) && !is_floating_point(to)) return false;
  if (from != kBool && to == kBool) return false;
  return true;
}

/// Give `t` fresh contiguous storage of `sizes` (an out= tensor of another shape).
void resize_output(Tensor& t, IntArrayRef sizes, IntArrayRef layout) {
  Tensor fresh = layout.empty() ? empty(sizes, t.options()) : empty_strided(sizes, layout, t.options());
  TensorImpl& impl = t.impl();
  impl.storage = fresh.storage();
  impl.sizes = DimVector(sizes);
  impl.strides = fresh.impl().strides;
  impl.storage_offset = 0;
}

/// Whether two tensors may touch the same bytes (same storage and overlapping byte ranges).
bool may_overlap(const Tensor& a, const Tensor& b) {
  if (!a.is_same_storage(b) || a.numel() == 0 || b.numel() == 0) return false;
  auto range = [](const Tensor& t) {
    int64_t lo = t.storage_offset(), hi = t.storage_offset();
    for (int64_t d = 0; d < t.dim(); ++d) (t.stride(d) >= 0 ? hi : lo) += (t.size(d) - 1) * t.stride(d);
    return std::pair{lo * t.element_size(), (hi + 1) * t.element_size()};
  };
  auto [alo, ahi] = range(a);
  auto [blo, bhi] = range(b);
  return alo < bhi && blo < ahi;
}
}  // namespace

void detail::check_result_fits(const OutputSpec& spec, Tensor& dst, bool resizable, bool exact_dtype, bool aliased_ok,
                                IntArrayRef layout) {
  TALLY_CHECK_TYPE_ERROR(!exact_dtype || spec.dtype == dst.dtype(), "Expected out tensor to have dtype ", dtype_name(spec.dtype),
                         ", but got ", dtype_name(dst.dtype()), " instead");
  TALLY_CHECK_TYPE_ERROR(can_cast(spec.dtype, dst.dtype()), "result type ", dtype_name(spec.dtype),
                         " can't be cast to the desired output type ", dtype_name(dst.dtype()));
  if (IntArrayRef(spec.sizes) != dst.sizes()) {
    TALLY_CHECK(resizable, "output with shape ", dst.sizes(), " doesn't match the broadcast shape ", IntArrayRef(spec.sizes));
    if (dst.numel() > 0)
      TALLY_WARN_ONCE("An output with one or more elements was resized since it had shape ", dst.sizes(),
                      ", which does not match the required output shape ", IntArrayRef(spec.sizes),
                      ". This behavior is deprecated, as in PyTorch: an out tensor with zero elements (empty({0})) is resized "
                      "without a warning.");
    resize_output(dst, spec.sizes, layout);
  }
  if (!aliased_ok) geometry::check_no_internal_overlap(dst.sizes(), dst.strides());
}

DimVector detail::output_strides(IntArrayRef sizes, std::span<const Tensor* const> inputs) {
  SmallVector<geometry::StridedShape, 4> shapes;
  for (const Tensor* t : inputs) {
    if (!t->defined() || t->dim() == 0) continue;  // a 0-d tensor (a CPU number on any device's op) decides no order
    shapes.push_back({t->sizes(), t->strides()});
  }
  return geometry::elementwise_output_strides(sizes, {shapes.data(), shapes.size()});
}

bool detail::writes_directly(const OutputSpec& spec, const Tensor& dst, bool elementwise, bool over_self,
                             std::span<const Tensor* const> inputs) {
  if (spec.dtype != dst.dtype()) return false;
  const auto same_view = [&](const Tensor& t) {
    return t.sizes() == dst.sizes() && t.strides() == dst.strides() && t.storage_offset() == dst.storage_offset();
  };
  // The update of self in place (writes_over_self): any layout, so long as nothing else it reads
  // lies in self's memory.
  over_self = over_self && !inputs.empty() && inputs[0]->is_same(dst);
  if (!elementwise && !over_self && !dst.is_contiguous()) return false;
  for (size_t i = 0; i < inputs.size(); ++i) {
    const Tensor* t = inputs[i];
    if (!t->defined() || !may_overlap(*t, dst)) continue;
    if (over_self && i == 0) continue;
    // An elementwise kernel reads index i before it writes index i: the written tensor itself
    // may be an input, but not a view that lands elsewhere in it.
    if (!elementwise || !same_view(*t)) return false;
  }
  return true;
}

void detail::check_saved_version(const Tensor& t, uint64_t saved, const Node& node, const char* role, size_t index) {
  const uint64_t now = version_of(t);
  if (now == saved) return;
  throw ValueError(::tally::detail::str_cat(
      "one of the variables needed for gradient computation has been modified by an inplace operation: ", describe(t),
      ", ", role, " ", index, " of ", node.name(), ", is at version ", now, "; expected version ", saved,
      " instead. Write the new values to a fresh tensor (the out-of-place op), or run backward before the in-place op"));
}

Tensor detail::output_with_history(const Tensor& out, Node& node) {
  Tensor t = out.detach();
  auto meta = ::tally::detail::make_pooled<AutogradMeta>();
  meta->requires_grad = true;
  meta->grad_fn = node.shared_from_this();
  t.impl().autograd = std::move(meta);
  return t;
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
std::set<std::string>& cpu_only_registry() {
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

void detail::register_op(std::string_view name, bool runs_on_cuda) {
  if (runs_on_cuda) return;
  std::lock_guard lock(registry_mutex());
  cpu_only_registry().emplace(name);
}

std::vector<std::string> cpu_only_ops() {
  std::lock_guard lock(registry_mutex());
  return {cpu_only_registry().begin(), cpu_only_registry().end()};
}

Tensor AutocastHook::cast(const Tensor& t, Dtype dtype) { return t.to(dtype); }

AutocastRegion::AutocastRegion(std::string_view op, std::initializer_list<Tensor*> inputs) : previous_(detail::tls_autocast_done) {
  enter(op, std::span<Tensor* const>(inputs.begin(), inputs.size()));
}

AutocastRegion::AutocastRegion(std::string_view op, std::span<Tensor> inputs) : previous_(detail::tls_autocast_done) {
  SmallVector<Tensor*, 4> pointers;
  for (Tensor& t : inputs) pointers.push_back(&t);
  enter(op, std::span<Tensor* const>(pointers.data(), pointers.size()));
}

void AutocastRegion::enter(std::string_view op, std::span<Tensor* const> inputs) {
  if (!detail::tls_autocast || detail::tls_op_depth > 0 || detail::tls_autocast_done) return;
  SmallVector<const Tensor*, 4> defined;
  for (Tensor* t : inputs)
    if (t->defined()) defined.push_back(t);
  const std::optional<Dtype> dtype = detail::tls_autocast->input_dtype(op, {defined.data(), defined.size()});
  detail::tls_autocast_done = true;  // the ops inside, and the casts, are not asked
  if (!dtype) return;
  for (Tensor* t : inputs) *t = detail::autocast_arg(*t, *dtype);
}

AutocastRegion::~AutocastRegion() { detail::tls_autocast_done = previous_; }

AutocastHook* set_autocast_hook(AutocastHook* hook) {
  AutocastHook* previous = detail::tls_autocast;
  detail::tls_autocast = hook;
  return previous;
}

OpObserver* set_op_observer(OpObserver* observer) {
  OpObserver* previous = detail::tls_observer;
  detail::tls_observer = observer;
  return previous;
}

void record_op(std::string_view name, const Cost& cost, double seconds) {
  if (detail::tls_observer) detail::tls_observer->on_op(name, cost, seconds);
}

Tensor detail::unsaved_stand_in(const Tensor& t) {
  // One no-bytes storage per device and thread, shared by every stand-in made there.
  thread_local std::vector<std::pair<Device, Storage>> storages;
  const Device device = t.device();
  Storage storage;
  for (const auto& [d, s] : storages)
    if (d == device) storage = s;
  if (!storage) {
    storage = std::make_shared<StorageImpl>(nullptr, 0, [](void*) {}, device);
    storage->mark_stand_in();
    storages.emplace_back(device, storage);
  }
  auto impl = ::tally::detail::make_pooled<TensorImpl>();
  impl->storage = std::move(storage);
  impl->sizes = DimVector(t.sizes());
  impl->strides = DimVector(t.strides());
  impl->storage_offset = t.storage_offset();
  impl->dtype = t.dtype();
  return Tensor(std::move(impl));
}

}  // namespace tally::ops
