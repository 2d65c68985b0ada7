#pragma once
// The one path every operator goes through.
//
// An operator is a struct with
//   static constexpr std::string_view name;          // as PyTorch names it
//   static Tensor forward(const Args&...);           // checks, shape/dtype rule, output, kernel call
//   static Cost cost(const Tensor& out, const Args&...);  // its FLOPs and bytes, as a formula
//   static constexpr bool supports_cuda = true;      // optional: forward also runs on the GPU (Note [Devices])
// and apply<Op>(args...) runs it, timing it and reporting (name, cost, seconds) to the observer
// the accounting layer installs. Backward rules (the autograd issue) attach here too, so an op
// stays defined in exactly one place.
//
// Note [Nested ops]
// An op's forward may call other ops (reshape calls contiguous, matmul may copy an operand).
// Those inner calls are part of the outer op: its declared cost covers them, so apply() does not
// report them a second time.

#include <chrono>
#include <cstdint>
#include <initializer_list>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <tuple>
#include <type_traits>
#include <vector>

#include "tally/core/autograd_meta.h"
#include "tally/core/tensor.h"
#include "tally/cuda/runtime.h"

namespace tally::ops {

/// What one op run cost. Conventions: a (M×K)·(K×N) matmul is 2·M·N·K FLOPs; elementwise math
/// is one FLOP per output element per arithmetic step; views cost nothing; bytes are counted at
/// the tensors' dtypes.
struct Cost {
  int64_t flops = 0;
  int64_t bytes_read = 0;
  int64_t bytes_written = 0;
  Cost& operator+=(const Cost& o) {
    flops += o.flops; bytes_read += o.bytes_read; bytes_written += o.bytes_written;
    return *this;
  }
};

/// Receives every top-level op that runs (installed by accounting::FlopCounter).
class OpObserver {
 public:
  virtual ~OpObserver() = default;
  /// Called after op `name` ran, with its declared cost and measured wall time.
  virtual void on_op(std::string_view name, const Cost& cost, double seconds) = 0;
};

// Note [Devices]
// An op runs where its tensors are. apply() finds that device (common_device) and refuses a call
// that mixes devices with PyTorch's error, except that a 0-d CPU tensor (a wrapped number) may
// join an op on the GPU, as in PyTorch. An op whose forward can run on CUDA says so with
// `static constexpr bool supports_cuda = true;` and picks its kernel by its output's device; any
// other op given a CUDA tensor raises NotImplementedError instead of reading device memory on the
// host. An op that moves bytes between devices (copy_) says `crosses_devices = true`. A top-level
// op on a GPU makes that GPU current for its duration (its nested ops inherit it). On the GPU
// the ledger's time is measured with CUDA events around the op, not with the host clock, since
// kernels run asynchronously.

/// The device an op on these tensors runs on; DeviceError if two of them disagree (a 0-d CPU
/// tensor agrees with any device).
Device common_device(std::span<const Tensor* const> tensors);
inline Device common_device(std::initializer_list<const Tensor*> tensors) {
  return common_device(std::span<const Tensor* const>(tensors.begin(), tensors.size()));
}

/// Names of every op with a backward rule, sorted (the registry gradcheck tests walk).
std::vector<std::string> differentiable_ops();

/// Install (or, with nullptr, remove) the observer for the calling thread; returns the previous one.
OpObserver* set_op_observer(OpObserver* observer);

namespace detail {
extern thread_local OpObserver* tls_observer;
extern thread_local int tls_op_depth;

/// Marks that an op is running on this thread (Note [Nested ops]).
struct OpDepthGuard {
  OpDepthGuard() { ++tls_op_depth; }
  ~OpDepthGuard() { --tls_op_depth; }
  OpDepthGuard(const OpDepthGuard&) = delete;
  OpDepthGuard& operator=(const OpDepthGuard&) = delete;
};
}  // namespace detail

/// What a backward rule receives besides the op's own arguments.
struct BackwardContext {
  const Tensor& grad;               ///< gradient of the op's output
  const Tensor& out;                ///< the op's output (saved without history)
  const SmallVector<bool, 4>& needs;  ///< per tensor input, in argument order: whether its gradient is wanted
  /// Whether tensor input `i` needs a gradient (no work for gradients nobody needs).
  bool needs_grad(size_t i) const { return i < needs.size() && needs[i]; }
};

namespace detail {

/// How an argument is kept in a graph node: views of caller memory become owned copies.
template <class T> struct stored { using type = std::decay_t<T>; };
template <> struct stored<IntArrayRef> { using type = std::vector<int64_t>; };
template <class T> using stored_t = typename stored<std::decay_t<T>>::type;
template <class T> stored_t<T> store(const T& v) {
  if constexpr (std::is_same_v<T, IntArrayRef>) return v.vec();
  else return v;
}

/// The tensors among an op's arguments, in order (a TensorList contributes each element).
template <class... Args>
SmallVector<const Tensor*, 4> tensor_args(const Args&... args) {
  SmallVector<const Tensor*, 4> out;
  auto add = [&](const auto& a) {
    using A = std::decay_t<decltype(a)>;
    if constexpr (std::is_same_v<A, Tensor>) out.push_back(&a);
    else if constexpr (std::is_same_v<A, TensorList>) for (const Tensor& t : a) out.push_back(&t);
  };
  (add(args), ...);
  return out;
}

/// NotImplementedError for an op with no CUDA kernel given a CUDA tensor.
[[noreturn]] void raise_no_cuda_kernel(std::string_view op);

/// Whether Op declares a CUDA forward (Note [Devices]).
template <class Op>
constexpr bool supports_cuda() {
  if constexpr (requires { Op::supports_cuda; }) return Op::supports_cuda;
  else return false;
}

/// The device Op runs on for these arguments; raises for mixed devices or an op without a CUDA kernel.
template <class Op, class... Args>
Device op_device(const Args&... args) {
  const SmallVector<const Tensor*, 4> ts = tensor_args(args...);
  if constexpr (requires { Op::crosses_devices; }) {
    return ts.empty() ? Device(kCPU) : ts[0]->device();
  } else {
    const Device d = common_device(std::span<const Tensor* const>(ts.data(), ts.size()));
    if (d.is_cuda() && !supports_cuda<Op>()) raise_no_cuda_kernel(Op::name);
    return d;
  }
}

/// "softmax" -> "SoftmaxBackward0", PyTorch's naming of grad_fn.
std::string backward_node_name(std::string_view op);

// Note [Version counter]
// A node keeps its tensor arguments and output by handle, not by copy, so an in-place op run
// between forward and backward would change the values a backward rule reads, and the gradient
// would be silently wrong. Every in-place op bumps its storage's version (shared by all views);
// a node remembers the versions of the tensors it keeps, and backward raises PyTorch's error if
// one moved. An op whose rule reads only shapes and dtypes (add, sub, views, cat, copies) says
// so with `static constexpr bool backward_reads_values = false;` and is not checked, as PyTorch
// does not check what a rule does not save; for every other op all kept tensors are checked,
// which is stricter than PyTorch where a rule reads only some of them.

/// Whether Op's backward rule reads the values of the tensors its node keeps (unless it says not).
template <class Op>
constexpr bool backward_reads_values() {
  if constexpr (requires { Op::backward_reads_values; }) return Op::backward_reads_values;
  else return true;
}

/// Version of `t`'s storage (0 for an undefined tensor).
inline uint64_t version_of(const Tensor& t) { return t.defined() && t.storage() ? t.storage()->version() : 0; }

/// Raises if a tensor `node` kept was written in place after the node recorded it.
void check_saved_version(const Tensor& t, uint64_t saved, const Node& node, const char* role, size_t index);

/// A recorded call of Op: its arguments, output and the backward rule Op::backward.
template <class Op, class... Stored>
struct OpNode final : Node {
  std::tuple<Stored...> args;
  Tensor out;
  SmallVector<bool, 4> needs;
  SmallVector<uint64_t, 4> arg_versions;  // per tensor argument, at record time (Note [Version counter])
  uint64_t out_version = 0;
  std::string name() const override {
    static const std::string n = backward_node_name(Op::name);
    return n;
  }
  TensorList apply(const Tensor& grad_output) override {
    if constexpr (backward_reads_values<Op>()) {
      std::apply(
          [&](const auto&... a) {
            const SmallVector<const Tensor*, 4> kept = tensor_args(a...);
            for (size_t i = 0; i < kept.size(); ++i) check_saved_version(*kept[i], arg_versions[i], *this, "input", i);
          },
          args);
      check_saved_version(out, out_version, *this, "output", 0);
    }
    BackwardContext ctx{grad_output, out, needs};
    return std::apply([&](const auto&... a) { return Op::backward(ctx, a...); }, args);
  }
  void release() override {
    args = {};
    out = Tensor();
    released = true;
  }
};

/// Whether Op has a backward rule callable with these (stored) arguments.
template <class Op, class... Args>
concept Differentiable = requires(const BackwardContext& c, const stored_t<Args>&... a) {
  { Op::backward(c, a...) } -> std::same_as<TensorList>;
};

/// Adds an op to the list of differentiable ops (autograd::differentiable_ops()).
void register_differentiable(std::string_view name);
/// Registers Op once, at start-up, for every Op that apply() can differentiate, so tests driven
/// by the registry cover a new op the moment it exists.
template <class Op>
struct DifferentiableRegistrar {
  static inline const bool registered = (register_differentiable(Op::name), true);
};

/// Attach a node recording Op(args) -> out when some tensor argument requires grad.
template <class Op, class... Args>
void record_autograd(Tensor& out, const Args&... args) {
  const SmallVector<const Tensor*, 4> inputs = tensor_args(args...);
  SmallVector<bool, 4> needs(inputs.size());
  bool any = false;
  for (size_t i = 0; i < inputs.size(); ++i) any |= (needs[i] = inputs[i]->defined() && inputs[i]->requires_grad());
  if (!any) return;
  auto node = ::tally::detail::make_pooled<OpNode<Op, stored_t<Args>...>>();
  node->args = std::tuple<stored_t<Args>...>(store(args)...);
  node->out = out.detach();  // saved without history: the node must not own itself
  node->needs = std::move(needs);
  if constexpr (backward_reads_values<Op>()) {  // only what backward will check (Note [Version counter])
    node->arg_versions.resize(inputs.size());
    for (size_t i = 0; i < inputs.size(); ++i) node->arg_versions[i] = version_of(*inputs[i]);
    node->out_version = version_of(out);
  }
  node->sequence_nr = autograd::next_sequence_nr();
  node->next_edges.reserve(inputs.size());
  for (const Tensor* t : inputs) node->next_edges.push_back(autograd::gradient_edge(*t));
  auto meta = ::tally::detail::make_pooled<AutogradMeta>();
  meta->requires_grad = true;
  meta->grad_fn = std::move(node);
  out.impl().autograd = std::move(meta);
}

/// In-place ops cannot be recorded: refuse them when the written tensor, or an operand, takes
/// part in a graph (an operand that requires grad would otherwise lose its gradient silently).
void refuse_inplace_in_graph(std::string_view op, const Tensor& self, const SmallVector<const Tensor*, 4>& operands);

template <class... Args>
void check_inplace_allowed(std::string_view op, const Tensor& self, const Args&... rest) {
  if (!GradMode::is_enabled()) return;
  const SmallVector<const Tensor*, 4> operands = tensor_args(rest...);
  bool any = self.requires_grad();
  for (const Tensor* t : operands) any = any || (t->defined() && t->requires_grad());
  if (any) refuse_inplace_in_graph(op, self, operands);
}

/// After an in-place op wrote `self`: its storage has a new version (Note [Version counter]).
template <class... Args>
void bump_version(const Tensor& self, const Args&...) {
  if (self.defined() && self.storage()) self.storage()->bump_version();
}

}  // namespace detail

/// Run op `Op` on `args`: forward; then, for a top-level call, report its cost and time to the
/// observer and attach its backward node when an input requires grad.
template <class Op, class... Args>
auto apply(const Args&... args) {
  const bool top_level = detail::tls_op_depth == 0;
  if constexpr (requires { Op::inplace; }) {
    if (top_level) detail::check_inplace_allowed(Op::name, args...);
  }
  const Device device = detail::op_device<Op>(args...);
  detail::OpDepthGuard guard;
  const bool observed = top_level && detail::tls_observer != nullptr;
  auto start = observed ? std::chrono::steady_clock::now() : std::chrono::steady_clock::time_point{};
  std::optional<cuda::DeviceGuard> on_gpu;  // Note [Devices]: kernels launch where the tensors are
  if (top_level && device.is_cuda()) on_gpu.emplace(device.index());
  std::optional<cuda::detail::EventTimer> gpu_clock;  // Note [Devices]: GPU ops are timed by the GPU
  if (observed && device.is_cuda()) gpu_clock.emplace(device.index());
  auto out = Op::forward(args...);
  // Writes an op makes inside another op (cat filling its output, a widened add_ copying back)
  // are the outer op's; only the user's own in-place call moves the version.
  if constexpr (requires { Op::inplace; }) {
    if (top_level) detail::bump_version(args...);
  }
  if (observed) {
    std::chrono::duration<double> took = std::chrono::steady_clock::now() - start;
    const double seconds = gpu_clock ? gpu_clock->elapsed_seconds() : took.count();
    detail::tls_observer->on_op(Op::name, Op::cost(out, args...), seconds);
  }
  if constexpr (detail::Differentiable<Op, Args...>) {
    (void)detail::DifferentiableRegistrar<Op>::registered;
    if (top_level && GradMode::is_enabled()) detail::record_autograd<Op>(out, args...);
  }
  return out;
}

}  // namespace tally::ops
