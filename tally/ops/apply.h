#pragma once
// The one path every operator goes through.
//
// An operator that computes values is a struct with
//   static constexpr std::string_view name;                  // as PyTorch names it
//   static OutputSpec meta(const Args&...);                  // every check; the output's sizes and dtype
//   static void compute(const Tensor& out, const Args&...);  // the kernel: fills `out` as meta described it
//   static Cost cost(const Tensor& out, const Args&...);     // its FLOPs and bytes, as a formula
// and, where they apply,
//   static TensorList backward(const BackwardContext&, const Args&...);  // its gradient rule
//   static constexpr bool supports_cuda = true;  // compute also runs on the GPU (Note [Devices])
//   static constexpr bool elementwise = true;    // out[i] reads inputs at i only (Note [Forms])
// From that one definition come the functional form apply<Op>(args...), which allocates the
// output, the in-place form apply_inplace<Op>(self, rest...) and the out= form
// apply_out<Op>(out, args...) (Note [Forms]), and the run on the meta device (Note [Meta device]).
// Each form reports (name, cost, seconds) to the observer the accounting layer installs, and the
// functional form attaches the backward node, so an op stays defined in exactly one place.
//
// An op that makes no new values (a view, which aliases its input; a composite of other ops)
// defines `static Tensor forward(const Args&...)` instead of meta and compute.
//
// Note [Nested ops]
// An op's compute may call other ops (reshape calls contiguous, matmul may copy an operand).
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
#include "tally/core/geometry.h"
#include "tally/core/tensor.h"
#include "tally/cuda/runtime.h"
#include "tally/ops/cost.h"
#include "tally/ops/creation.h"

namespace tally::ops {

// Note [Bytes read]
// An op's bytes read are what it moves from memory: each input's elements once, as its storage
// holds them. A dim of stride 0 (an expanded view) repeats the same bytes, so a bias broadcast
// over a batch, or a gradient expanded from a scalar by sum's backward, is read at its own size,
// not at the broadcast size (which overstated a product's bytes 4.5-fold and a sum's backward
// rows by the whole gradient). A strided view is read at its elements' bytes; what a cache line
// drags in beside them is the hardware's, not the op's.

/// `t`'s elements' bytes as memory holds them, each once (Note [Bytes read]).
inline int64_t bytes_held(const Tensor& t) {
  if (!t.defined()) return 0;  // an absent optional input (a norm without weight)
  int64_t n = 1;
  for (int64_t d = 0; d < t.dim(); ++d)
    if (t.stride(d) != 0 || t.size(d) == 0) n *= t.size(d);
  return n * t.element_size();
}

/// What an op's meta step decides about its output: sizes and dtype, and the device when it is
/// not the device of the op's tensors (a factory, a copy to another device).
struct OutputSpec {
  DimVector sizes;
  Dtype dtype = kFloat32;
  std::optional<Device> device = std::nullopt;
};

// Note [Forms]
// One op definition gives three forms, as in PyTorch:
//   functional  y = op(a, b)        apply allocates y from meta's spec and computes into it;
//   in-place    a.op_(b)            the result is written into a (the first argument);
//   out=        op_out(out, a, b)   the result is written into a given tensor.
// The in-place and out= forms follow PyTorch's rules: the result dtype must cast to the written
// tensor's (no floating result into an integer tensor, nothing but bool into a bool one); in
// place, the result's shape must be self's; an out= tensor of another shape is resized (it gets
// fresh storage of the result's shape, which its other views do not see). An op that writes only
// its own dtype, as PyTorch's products do, says `static constexpr bool exact_out_dtype = true;`
// (out= of float64 for a float32 product is refused there). The kernel writes the
// tensor directly when it can: same dtype, and either the op is `elementwise` (any strides, and
// an input may be the written tensor itself) or the tensor is contiguous and shares no memory
// with an input. Otherwise the op computes into a temporary and copies it over, inside the op.
// Neither form can be recorded by autograd: in place is refused on tensors in a graph
// (Note [Version counter]), out= when any argument requires grad, as in PyTorch.

// Note [Meta device]
// A tensor on the meta device has sizes, strides and a dtype but no bytes. An op on meta tensors
// runs its meta step only: every check and shape rule, the output's allocation (which the meta
// device counts but never makes, core/allocator.h), the ledger row with its cost, the backward
// node. So a model run on meta tensors gives the real run's FLOPs and, by category, its memory,
// in the time it takes to walk the graph. Ops defined by `forward` run it on meta tensors only
// if they say `static constexpr bool forward_on_meta = true;` (views and composites of other
// ops); any other op refuses meta tensors with NotImplementedError naming itself. An op whose
// compute is made of other ops, and so holds temporaries while it runs, says
// `static constexpr bool compute_on_meta = true;`: its compute runs on meta tensors too, and the
// meta run counts those temporaries as the real run allocates them.

// Note [Autocast]
// A mixed-precision layer installs an AutocastHook (set_autocast_hook), as the accounting layer
// installs its observer: ops never include it. Before a top-level functional op checks its
// arguments, the hook may name a dtype for the op's floating-point tensor inputs; apply casts
// them through the hook's cast() (each cast is an op of its own, recorded and differentiable;
// the hook may hand back a copy it made before, as amp::AutocastGuard does for weights) and runs
// the op on the casts. A composite that is one operation to the user (linear, einsum, attention)
// asks the hook once under its own name with an AutocastRegion, so that its parts run as one:
// linear's bias joins its product in bfloat16 instead of promoting it back to float32.
class AutocastHook {
 public:
  virtual ~AutocastHook() = default;
  /// The dtype `op`'s floating inputs should be cast to, or nullopt to run the op as called.
  virtual std::optional<Dtype> input_dtype(std::string_view op, std::span<const Tensor* const> inputs) = 0;
  /// `t` in `dtype`: by default a new cast (Tensor::to).
  virtual Tensor cast(const Tensor& t, Dtype dtype);
};

/// Install (or, with nullptr, remove) the autocast hook for the calling thread; returns the previous one.
AutocastHook* set_autocast_hook(AutocastHook* hook);

/// For a composite op: asks the autocast hook about `op` once, casts the floating tensors among
/// `inputs` in place when it names a dtype, and keeps the ops inside from being asked again while
/// it lives (Note [Autocast]). Without a hook, or inside another op or region, it does nothing.
class AutocastRegion {
 public:
  AutocastRegion(std::string_view op, std::initializer_list<Tensor*> inputs);
  AutocastRegion(std::string_view op, std::span<Tensor> inputs);
  ~AutocastRegion();
  AutocastRegion(const AutocastRegion&) = delete;
  AutocastRegion& operator=(const AutocastRegion&) = delete;

 private:
  void enter(std::string_view op, std::span<Tensor* const> inputs);
  bool previous_;
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
/// Names of every op that has no CUDA kernel and raises NotImplementedError for a CUDA tensor,
/// sorted: what docs/cuda.md lists, and a test holds it to. An op some of whose forms run on the
/// GPU and some not (two structs of one name) is listed.
std::vector<std::string> cpu_only_ops();

/// What a backward rule receives besides the op's own arguments.
struct BackwardContext {
  const Tensor& grad;               ///< gradient of the op's output
  const Tensor& out;                ///< the op's output (saved without history)
  const SmallVector<bool, 4>& needs;  ///< per tensor input, in argument order: whether its gradient is wanted
  /// Whether tensor input `i` needs a gradient (no work for gradients nobody needs).
  bool needs_grad(size_t i) const { return i < needs.size() && needs[i]; }
};

// Note [Saved tensors]
// A graph node keeps what its backward rule reads, and no more: the lecture's activations are
// exactly those tensors, and keeping an input or output the rule never reads would hold its
// memory until backward for nothing (softmax's input, an add's operands). An op says what its rule
// reads with
//   static SavedTensors saved(const SmallVector<bool, 4>& needs);  // needs: per tensor input, its gradient is wanted
// (which may depend on which gradients are wanted: a product's rule reads b only for a's gradient).
// An op without it keeps every tensor argument and its output. A tensor not kept is replaced in the
// node by a stand-in with its sizes, strides, dtype and device and no bytes; a rule that read its
// values anyway raises InternalError (Tensor::data_ptr), so a wrong declaration cannot compute with
// garbage. Stand-ins are not checked by the version counter, as PyTorch does not check what it
// did not save.

// Note [Second backward]
// A backward without retain_graph frees what each node kept; running a node again after that
// raises "Trying to backward through the graph a second time". A node that kept no values (its
// rule reads only shapes: sum, a view, a cast) has nothing to free, so it stays
// runnable, as PyTorch's nodes that saved only sizes do: `l = w.sum(); l.backward(); l.backward()`
// accumulates twice there and here, while `(w * w).sum()` raises on the second call in both.

/// Which of a node's tensors its backward rule reads: per tensor input in argument order (a
/// missing entry means kept), and the output.
struct SavedTensors {
  SmallVector<bool, 4> inputs;
  bool output = true;
};

namespace detail {

extern thread_local OpObserver* tls_observer;
extern thread_local AutocastHook* tls_autocast;
extern thread_local bool tls_autocast_done;  // the op being run already went through the hook
extern thread_local int tls_op_depth;

/// Marks that an op is running on this thread (Note [Nested ops]).
struct OpDepthGuard {
  OpDepthGuard() { ++tls_op_depth; }
  ~OpDepthGuard() { --tls_op_depth; }
  OpDepthGuard(const OpDepthGuard&) = delete;
  OpDepthGuard& operator=(const OpDepthGuard&) = delete;
};

/// How an argument is kept in a graph node: views of caller memory become owned copies.
template <class T> struct stored { using type = std::decay_t<T>; };
template <> struct stored<IntArrayRef> { using type = std::vector<int64_t>; };
template <class T> using stored_t = typename stored<std::decay_t<T>>::type;
template <class T> stored_t<T> store(const T& v) {
  if constexpr (std::is_same_v<T, IntArrayRef>) return v.vec();
  else return v;
}

/// Calls f on each tensor among an op's arguments, in order (a TensorList gives each element).
template <class F, class... Args>
void for_each_tensor(F&& f, const Args&... args) {
  [[maybe_unused]] auto visit = [&](const auto& a) {
    using A = std::decay_t<decltype(a)>;
    if constexpr (std::is_same_v<A, Tensor>) f(a);
    else if constexpr (std::is_same_v<A, TensorList>) for (const Tensor& t : a) f(t);
  };
  (visit(args), ...);
}

/// The tensors among an op's arguments, in order.
template <class... Args>
SmallVector<const Tensor*, 4> tensor_args(const Args&... args) {
  SmallVector<const Tensor*, 4> out;
  for_each_tensor([&](const Tensor& t) { out.push_back(&t); }, args...);
  return out;
}

/// Whether any tensor among the arguments requires grad.
template <class... Args>
bool any_requires_grad(const Args&... args) {
  bool any = false;
  for_each_tensor([&](const Tensor& t) { any = any || (t.defined() && t.requires_grad()); }, args...);
  return any;
}

/// NotImplementedError for an op with no CUDA kernel given a CUDA tensor.
[[noreturn]] void raise_no_cuda_kernel(std::string_view op);
/// NotImplementedError for an op with no meta step given a meta tensor.
[[noreturn]] void raise_no_meta_rule(std::string_view op);
/// NotImplementedError for an op without a backward rule met in a backward pass that records
/// itself (create_graph) with inputs that require grad: its result would be taken as a constant
/// and the second derivative would be silently wrong.
[[noreturn]] void raise_no_double_backward(std::string_view op);

/// Whether Op declares a CUDA forward (Note [Devices]).
template <class Op>
constexpr bool supports_cuda() {
  if constexpr (requires { Op::supports_cuda; }) return Op::supports_cuda;
  else return false;
}

/// Whether Op is defined by meta + compute for these arguments (else by forward).
template <class Op, class... Args>
constexpr bool computes() {
  return requires(const Args&... a) { Op::meta(a...); };
}

/// Whether Op's output at each index reads its inputs at that index only (Note [Forms]).
template <class Op>
constexpr bool elementwise() {
  if constexpr (requires { Op::elementwise; }) return Op::elementwise;
  else return false;
}

/// Whether Op's compute also runs on meta tensors (Note [Meta device]).
template <class Op>
constexpr bool compute_on_meta() {
  if constexpr (requires { Op::compute_on_meta; }) return Op::compute_on_meta;
  else return false;
}

/// The strides of an elementwise op's new output (Note [Output layout]).
DimVector output_strides(IntArrayRef sizes, std::span<const Tensor* const> inputs);

/// The strides Op's new output gets: an elementwise op's inputs' layout, row-major for any other
/// op, or what the op says itself with `static DimVector output_strides(sizes, args...)` (clone's
/// memory_format, a copy to another device).
template <class Op, class... Args>
DimVector output_layout(IntArrayRef sizes, const Args&... args) {
  if constexpr (requires { Op::output_strides(sizes, args...); }) {
    return Op::output_strides(sizes, args...);
  } else if constexpr (elementwise<Op>()) {
    const SmallVector<const Tensor*, 4> inputs = tensor_args(args...);
    return output_strides(sizes, {inputs.data(), inputs.size()});
  } else {
    return geometry::contiguous_strides(sizes);
  }
}

/// Adds an op to the list of ops apply() runs, with whether it has a CUDA kernel (cpu_only_ops()).
void register_op(std::string_view name, bool runs_on_cuda);
/// Registers Op once, at start-up, for every Op that apply() can run.
template <class Op>
struct OpRegistrar {
  static inline const bool registered = (register_op(Op::name, supports_cuda<Op>() || requires { Op::crosses_devices; }), true);
};

/// The device Op runs on for these arguments; raises for mixed devices, or an op without a CUDA
/// kernel or meta step given such tensors.
template <class Op, class... Args>
Device op_device(const Args&... args) {
  (void)OpRegistrar<Op>::registered;
  const SmallVector<const Tensor*, 4> ts = tensor_args(args...);
  Device d(kCPU);
  if constexpr (requires { Op::crosses_devices; }) {
    d = ts.empty() ? Device(kCPU) : ts[0]->device();
  } else {
    d = common_device(std::span<const Tensor* const>(ts.data(), ts.size()));
    if (d.is_cuda() && !supports_cuda<Op>()) raise_no_cuda_kernel(Op::name);
  }
  if constexpr (!computes<Op, Args...>()) {
    if constexpr (requires { Op::forward_on_meta; }) {
      static_assert(Op::forward_on_meta, "forward_on_meta is a promise: leave it out rather than set it false");
    } else {
      if (d.is_meta()) raise_no_meta_rule(Op::name);
    }
  }
  return d;
}

/// The bookkeeping every run of an op shares: the nesting depth, the GPU made current, and for a
/// top-level op the clock whose time goes to the observer with the op's cost.
class OpScope {
 public:
  explicit OpScope(Device device)
      : top_level_(tls_op_depth == 0), observed_(top_level_ && tls_observer != nullptr), device_(device) {
    if (top_level_ && device.is_cuda()) on_gpu_.emplace(device.index());  // Note [Devices]
    if (observed_ && device.is_cuda()) gpu_clock_.emplace(device.index());
    if (observed_) start_ = std::chrono::steady_clock::now();
  }
  bool top_level() const { return top_level_; }
  /// Tell the observer, if any, that Op(args) ran with output `out`.
  template <class Op, class... Args>
  void report(const Tensor& out, const Args&... args) {
    if (observed_) report(Op::name, Op::cost(out, args...));
  }
  /// Tell the observer, if any, that a compound step `name` (an optimizer's, say) ran at `cost`;
  /// the ops run inside the scope are nested in it (Note [Nested ops]).
  void report(std::string_view name, const Cost& cost) {
    if (observed_) tls_observer->on_op(name, cost, seconds());
  }

 private:
  double seconds() {
    if (device_.is_meta()) return 0.0;  // nothing ran
    if (gpu_clock_) return gpu_clock_->elapsed_seconds();
    return std::chrono::duration<double>(std::chrono::steady_clock::now() - start_).count();
  }
  bool top_level_;
  bool observed_;
  Device device_;
  std::chrono::steady_clock::time_point start_;
  std::optional<cuda::DeviceGuard> on_gpu_;
  std::optional<cuda::detail::EventTimer> gpu_clock_;
  OpDepthGuard depth_;  // last: top_level_ reads the depth before it rises
};

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

/// What Op's node keeps for these needs (Note [Saved tensors]); every tensor unless Op says.
template <class Op>
SavedTensors saved_tensors(const SmallVector<bool, 4>& needs) {
  if constexpr (requires { Op::saved(needs); }) {
    return Op::saved(needs);
  } else if constexpr (!backward_reads_values<Op>()) {
    // A rule that reads only shapes, dtypes and devices keeps no values (Note [Version counter]).
    return {SmallVector<bool, 4>(needs.size(), false), false};
  } else {
    return {};
  }
}

/// Per tensor input: whether its gradient is wanted.
inline SmallVector<bool, 4> needs_of(const SmallVector<const Tensor*, 4>& inputs) {
  SmallVector<bool, 4> needs(inputs.size());
  for (size_t i = 0; i < inputs.size(); ++i) needs[i] = inputs[i]->defined() && inputs[i]->requires_grad();
  return needs;
}

/// A tensor with t's sizes, strides, dtype and device and no bytes (Note [Saved tensors]).
Tensor unsaved_stand_in(const Tensor& t);

/// Replace the tensor arguments `saved` does not keep by stand-ins, in argument order.
template <class... Stored>
void drop_unsaved(std::tuple<Stored...>& args, const SavedTensors& saved) {
  size_t i = 0;
  std::apply(
      [&](auto&... a) {
        auto visit = [&](auto& v) {
          using A = std::decay_t<decltype(v)>;
          if constexpr (std::is_same_v<A, Tensor>) {
            if (i < saved.inputs.size() && !saved.inputs[i] && v.defined()) v = unsaved_stand_in(v);
            ++i;
          } else if constexpr (std::is_same_v<A, TensorList>) {
            for (Tensor& t : v) {  // each element has its own entry, as a tensor argument
              if (i < saved.inputs.size() && !saved.inputs[i] && t.defined()) t = unsaved_stand_in(t);
              ++i;
            }
          }
        };
        (visit(a), ...);
      },
      args);
}

/// A node's saved output as its rule reads it under create_graph: the same values, with the
/// node as grad_fn.
Tensor output_with_history(const Tensor& out, Node& node);

/// Whether t is a stand-in for a tensor a node did not keep.
inline bool is_stand_in(const Tensor& t) { return t.defined() && t.storage() && t.storage()->is_stand_in(); }

/// A recorded call of Op: its arguments, output and the backward rule Op::backward. The storages
/// it keeps count as activations while it keeps them (Note [Activations] in core/storage.h).
template <class Op, class... Stored>
struct OpNode final : Node {
  std::tuple<Stored...> args;
  Tensor out;
  SmallVector<bool, 4> needs;
  SmallVector<uint64_t, 4> arg_versions;  // per tensor argument, at record time (Note [Version counter])
  uint64_t out_version = 0;
  bool keeps_activations = false;  // it holds some tensor's bytes (false for a rule that reads shapes only)
  ~OpNode() override { let_go(); }
  std::string name() const override {
    static const std::string n = backward_node_name(Op::name);
    return n;
  }
  TensorList apply(const Tensor& grad_output) override {
    if constexpr (backward_reads_values<Op>()) {
      std::apply(
          [&](const auto&... a) {
            const SmallVector<const Tensor*, 4> kept = tensor_args(a...);
            for (size_t i = 0; i < kept.size(); ++i)
              if (!is_stand_in(*kept[i])) check_saved_version(*kept[i], arg_versions[i], *this, "input", i);
          },
          args);
      if (!is_stand_in(out)) check_saved_version(out, out_version, *this, "output", 0);
    }
    // Under create_graph the rule reads the output with this node as its grad_fn, so that a
    // derivative through it comes back here (Note [Higher-order gradients] in autograd/engine.h).
    const Tensor seen = GradMode::is_enabled() && out.defined() && !is_stand_in(out) ? output_with_history(out, *this) : out;
    BackwardContext ctx{grad_output, seen, needs};
    return std::apply([&](const auto&... a) { return Op::backward(ctx, a...); }, args);
  }
  /// After a backward without retain_graph: let go of the values kept. A node that kept none (its
  /// rule reads shapes only, as sum's and view's) can run again, as PyTorch's nodes that saved
  /// only sizes can (Note [Second backward]).
  void release() override {
    if (!keeps_activations) return;
    let_go();
    args = {};
    out = Tensor();
    released = true;
  }
  /// Mark the storages this node keeps as activations (none for a rule that reads shapes only).
  void keep() {
    for_each_kept([this](StorageImpl& s) {
      s.retain_for_backward();
      keeps_activations = true;
    });
  }

 private:
  void let_go() {
    if (!keeps_activations) return;
    keeps_activations = false;
    for_each_kept([](StorageImpl& s) { s.release_for_backward(); });
  }
  template <class F>
  void for_each_kept(F f) {
    auto visit = [&](const Tensor& t) {
      if (t.defined() && t.storage() && !t.storage()->is_stand_in()) f(*t.storage());
    };
    std::apply([&](const auto&... a) { for_each_tensor(visit, a...); }, args);
    visit(out);
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

/// Whether a call of Op on these arguments will be recorded for backward.
template <class Op, class... Args>
bool will_record(const Args&... args) {
  if constexpr (Differentiable<Op, Args...>) return tls_op_depth == 0 && GradMode::is_enabled() && any_requires_grad(args...);
  else return false;
}

/// Attach a node recording Op(args) -> out (for a call will_record accepted), given which inputs
/// need gradients and what the rule reads for them (saved_tensors).
template <class Op, class... Args>
void record_autograd(Tensor& out, SmallVector<bool, 4> needs, const SavedTensors& saved, const Args&... args) {
  const SmallVector<const Tensor*, 4> inputs = tensor_args(args...);
  auto node = ::tally::detail::make_pooled<OpNode<Op, stored_t<Args>...>>();
  node->args = std::tuple<stored_t<Args>...>(store(args)...);
  drop_unsaved(node->args, saved);
  // The output is kept without history: the node must not own itself.
  node->out = saved.output ? out.detach() : unsaved_stand_in(out);
  node->keep();
  node->needs = std::move(needs);
  if constexpr (backward_reads_values<Op>()) {  // only what backward will check (Note [Version counter])
    node->arg_versions.resize(inputs.size());
    for (size_t i = 0; i < inputs.size(); ++i) node->arg_versions[i] = version_of(*inputs[i]);
    node->out_version = version_of(out);
  }
  node->sequence_nr = autograd::next_sequence_nr();
  node->module_path = current_module_path_handle();
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

/// out= cannot be recorded: PyTorch's error, for a call where an argument (or out) requires grad.
[[noreturn]] void refuse_out_in_graph(std::string_view op);

/// Raises unless a result of `spec` can be written into `dst` (Note [Forms]): its dtype must
/// cast to dst's (be dst's, for an op with `exact_out_dtype`), and in place its shape must be
/// dst's. For out=, resizes dst instead. Unless `aliased_ok`, dst may not have elements that share
/// memory (an expanded tensor).
/// A resized out= tensor takes `layout` (the strides Op's own new output would have, as
/// PyTorch restrides a resized output to its inputs' layout), or row-major where that is empty.
void check_result_fits(const OutputSpec& spec, Tensor& dst, bool resizable, bool exact_dtype, bool aliased_ok = false,
                       IntArrayRef layout = {});

template <class Op>
constexpr bool exact_out_dtype() {
  if constexpr (requires { Op::exact_out_dtype; }) return Op::exact_out_dtype;
  else return false;
}

/// An op whose every element of the result is one value (fill_) may write a destination whose
/// elements share memory, as PyTorch's fill_ and zero_ do: `static constexpr bool aliased_output_ok = true;`.
template <class Op>
constexpr bool aliased_output_ok() {
  if constexpr (requires { Op::aliased_output_ok; }) return Op::aliased_output_ok;
  else return false;
}

/// An op whose compute, given its first argument itself as the output, only writes its update
/// over it (index_put_, scatter_: a few elements of a large tensor) says
/// `static constexpr bool writes_over_self = true;`, and in place runs on self directly, whatever
/// its layout, instead of on a temporary copied back.
template <class Op>
constexpr bool writes_over_self() {
  if constexpr (requires { Op::writes_over_self; }) return Op::writes_over_self;
  else return false;
}

/// Whether the kernel may write `dst` directly with these inputs (Note [Forms]); `over_self`
/// for an op that writes_over_self.
bool writes_directly(const OutputSpec& spec, const Tensor& dst, bool elementwise, bool over_self, std::span<const Tensor* const> inputs);

/// Compute Op(args) into dst, which already has spec's shape: directly, or through a temporary.
template <class Op, class... Args>
void write_result(const OutputSpec& spec, Tensor& dst, const Args&... args) {
  const SmallVector<const Tensor*, 4> inputs = tensor_args(args...);
  if (writes_directly(spec, dst, elementwise<Op>(), writes_over_self<Op>(), std::span<const Tensor* const>(inputs.data(), inputs.size()))) {
    Op::compute(dst, args...);
    return;
  }
  Tensor result = empty(spec.sizes, TensorOptions(spec.dtype).device(dst.device()));
  Op::compute(result, args...);
  dst.copy_(result);  // nested: part of this op's cost
}

/// A copy of an argument with its floating tensors cast to `dtype` (Note [Autocast]).
inline Tensor autocast_arg(const Tensor& t, Dtype dtype) {
  return t.defined() && is_floating_point(t.dtype()) && t.dtype() != dtype ? tls_autocast->cast(t, dtype) : t;
}
inline TensorList autocast_arg(const TensorList& ts, Dtype dtype) {
  TensorList out;
  out.reserve(ts.size());
  for (const Tensor& t : ts) out.push_back(autocast_arg(t, dtype));
  return out;
}
template <class T>
const T& autocast_arg(const T& v, Dtype) {
  return v;
}

/// Compute Op(args) into `dst` (in place, or out=) with the bookkeeping of a run: checks and
/// shape (meta), the kernel unless on the meta device, the version bump of a user's write, the
/// ledger row.
template <class Op, class... Args>
Tensor& write_into(Tensor& dst, bool resizable, Device device, const Args&... args) {
  OpScope scope(device);
  const OutputSpec spec = Op::meta(args...);
  const bool resizes = resizable && IntArrayRef(spec.sizes) != dst.sizes();
  check_result_fits(spec, dst, resizable, exact_out_dtype<Op>(), aliased_output_ok<Op>(),
                    resizes ? output_layout<Op>(spec.sizes, args...) : DimVector());
  if ((!device.is_meta() || compute_on_meta<Op>()) && dst.numel() > 0) write_result<Op>(spec, dst, args...);
  // Writes an op makes inside another op (cat filling its output, a widened add_ copying back)
  // are the outer op's; only the user's own call moves the version.
  if (scope.top_level() && dst.storage()) dst.storage()->bump_version();
  scope.report<Op>(dst, args...);
  return dst;
}

/// Sets tls_autocast_done for one op's run.
struct AutocastDone {
  bool previous = tls_autocast_done;
  AutocastDone() { tls_autocast_done = true; }
  ~AutocastDone() { tls_autocast_done = previous; }
};

// Note [Integer results have no gradient]
// An op whose result is an integer or bool (x.to(kInt64), a comparison) is not recorded, even when
// an input requires grad: its result does not require grad, as in PyTorch, so a gradient cannot
// pass through a cast to an integer and back, and backward() from it raises "does not require grad".

/// The functional form, after autocast.
template <class Op, class... Args>
auto run(const Args&... args) {
  const Device device = op_device<Op>(args...);
  bool recorded = will_record<Op>(args...);  // before the scope: it reads the depth
  // What the node will keep, decided once: an output it keeps is allocated as activations from
  // the start (Note [Activations] in core/storage.h).
  SmallVector<bool, 4> needs;
  SavedTensors saved;
  if (recorded) {
    needs = needs_of(tensor_args(args...));
    saved = saved_tensors<Op>(needs);
  }
  OpScope scope(device);
  Tensor out;
  if constexpr (computes<Op, Args...>()) {
    const OutputSpec spec = Op::meta(args...);
    recorded = recorded && is_floating_point(spec.dtype);  // Note [Integer results have no gradient]
    const TensorOptions options = TensorOptions(spec.dtype).device(spec.device.value_or(device));
    const DimVector strides = output_layout<Op>(spec.sizes, args...);
    out = recorded && saved.output ? ::tally::detail::empty_activation(spec.sizes, strides, options)
                                   : empty_strided(spec.sizes, strides, options);
    if ((!out.device().is_meta() || compute_on_meta<Op>()) && out.numel() > 0) Op::compute(out, args...);
  } else {
    out = Op::forward(args...);
    recorded = recorded && is_floating_point(out.dtype());
  }
  scope.report<Op>(out, args...);
  if constexpr (Differentiable<Op, Args...>) {
    (void)DifferentiableRegistrar<Op>::registered;
    if (recorded) record_autograd<Op>(out, std::move(needs), saved, args...);
  } else {
    if (autograd::in_backward() && GradMode::is_enabled() && scope.top_level() && is_floating_point(out.dtype()) && any_requires_grad(args...))
      raise_no_double_backward(Op::name);
  }
  return out;
}

}  // namespace detail

/// Run op `Op` on `args` and return its new output: checks and shape (meta), allocation, kernel
/// (compute, skipped on the meta device); then, for a top-level call, report its cost and time to
/// the observer and attach its backward node when an input requires grad.
template <class Op, class... Args>
Tensor apply(const Args&... args) {
  if (detail::tls_autocast && detail::tls_op_depth == 0 && !detail::tls_autocast_done) {
    const SmallVector<const Tensor*, 4> inputs = detail::tensor_args(args...);
    if (std::optional<Dtype> dtype = detail::tls_autocast->input_dtype(Op::name, {inputs.data(), inputs.size()})) {
      detail::AutocastDone done;  // the casts below, and the op on them, are not asked again
      auto cast = std::make_tuple(detail::autocast_arg(args, *dtype)...);
      return std::apply([](const auto&... a) { return detail::run<Op>(a...); }, cast);
    }
  }
  return detail::run<Op>(args...);
}

/// Run Op(self, rest...) and write the result into self (x.mul_(y)); Note [Forms].
/// `self` is const as libtorch's in-place methods are: a Tensor is a handle, and writing its
/// elements changes what it points to, not the handle.
template <class Op, class... Rest>
Tensor& apply_inplace(const Tensor& self, const Rest&... rest) {
  Tensor& target = const_cast<Tensor&>(self);
  if (detail::tls_op_depth == 0 && GradMode::is_enabled() && detail::any_requires_grad(self, rest...))
    detail::refuse_inplace_in_graph(Op::name, target, detail::tensor_args(rest...));
  return detail::write_into<Op>(target, /*resizable=*/false, detail::op_device<Op>(self, rest...), target, rest...);
}

/// Run Op(args...) and write the result into `out` (torch.add(a, b, out=c)); Note [Forms].
template <class Op, class... Args>
Tensor& apply_out(Tensor& out, const Args&... args) {
  if (detail::tls_op_depth == 0 && GradMode::is_enabled() && detail::any_requires_grad(out, args...))
    detail::refuse_out_in_graph(Op::name);
  const Device device = detail::op_device<Op>(args...);
  TALLY_CHECK_TYPE(DeviceError, out.device() == device, Op::name, "(): expected the out tensor on ", device.str(),
                   " with the inputs, but it is on ", out.device().str());
  return detail::write_into<Op>(out, /*resizable=*/true, device, args...);
}

}  // namespace tally::ops
