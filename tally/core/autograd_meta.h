#pragma once
// The autograd graph's data: nodes, edges, the per-tensor autograd slot, grad mode. These live
// in core because every tensor carries the slot and apply() (tally/ops/apply.h) attaches nodes;
// the engine that walks the graph is tally/autograd/engine.cpp.

#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <string_view>
#include <vector>

#include "tally/core/module_path.h"
#include "tally/core/object_pool.h"
#include "tally/core/tensor.h"

namespace tally {

struct Node;

/// Where a gradient flows: input `input_nr` of `node`.
struct Edge {
  std::shared_ptr<Node> node;
  int input_nr = 0;
};

// Note [Concurrent backward]
// Several threads may run backward() at once, over graphs that share nodes and leaves (PyTorch
// allows it too). What makes that safe:
// - A node runs under its own `mutex` (the engine holds it across the freed-graph check, apply,
//   the retained gradient and release), so a shared node's saved tensors are never freed under
//   another thread's apply. Two threads through one node take turns; with retain_graph=false the
//   second gets the freed-graph error, as in PyTorch, and nothing crashes.
// - A leaf's accumulator is made once (under its AutogradMeta's `mutex`, gradient_edge), and adds
//   into leaf.grad() under that same mutex, so no addition is lost.
// - The engine's bookkeeping (dependency counts, pending gradients, the ready queue) is private
//   to each backward() call; grad mode, the backward phase, the module path, the autocast hook and
//   the ledger's observer are per thread.
// - Shared counters are atomic or locked: version counters, the CPU allocator and the meta
//   device's counters, a storage's activation count and category, the default generator.
// Not safe, as in PyTorch: changing one tensor from two threads at once (requires_grad_,
// set_grad, in-place ops, an optimizer's step) or reading w.grad() while another thread's
// backward is adding into it. A FlopCounter records the ops of the thread that made it; a
// MemoryTracker reads the process's counters, so it sees every thread's bytes.

/// One backward step: given the gradient of its output, the gradients of its inputs.
struct Node : std::enable_shared_from_this<Node> {
  /// Releases the graph behind this node without recursion (Note [Deep graphs]).
  virtual ~Node();
  /// PyTorch-style name, e.g. "MulBackward0".
  virtual std::string name() const = 0;
  /// Gradients for next_edges, in order (undefined where an input needs none).
  virtual TensorList apply(const Tensor& grad_output) = 0;
  /// Drop saved tensors once the graph has been used (unless retain_graph).
  virtual void release() {}
  /// Whether release() ran: a second backward through this node is an error.
  bool released = false;
  /// The nodes of this node's inputs; a null node means that input needs no gradient.
  std::vector<Edge, detail::PoolAllocator<Edge>> next_edges;
  /// Creation order: later nodes run first when several are ready.
  uint64_t sequence_nr = 0;
  /// The module whose forward made this node; its backward ops are attributed to it.
  ModulePath module_path;
  /// The tensor whose gradient this node receives, when it asked for it: a non-leaf output
  /// that retain_grad() or register_hook(), or (for a leaf's accumulator) the leaf. Its hooks
  /// run, and a retained grad is stored, when the gradient arrives.
  std::weak_ptr<struct AutogradMeta> output_meta;
  /// Held while the engine runs or releases this node (Note [Concurrent backward]).
  std::mutex mutex;
};

/// The autograd state of one tensor.
struct AutogradMeta {
  bool requires_grad = false;
  /// The accumulated gradient (leaves, and non-leaves that retain_grad()).
  Tensor grad;
  /// The node that produced this tensor; null for leaves.
  std::shared_ptr<Node> grad_fn;
  /// For leaves: the node that accumulates into `grad`, shared by every use of the leaf.
  std::weak_ptr<Node> grad_accumulator;
  bool retains_grad = false;
  /// Leaves: run after each backward pass has accumulated into `grad`, in registration order
  /// (Tensor::register_post_accumulate_grad_hook), each with its handle.
  std::vector<std::pair<unsigned, std::function<void(const Tensor&)>>> post_accumulate_grad_hooks;
  /// Run on the gradient before it is used (Tensor::register_hook), in registration order.
  std::vector<std::pair<unsigned, std::function<Tensor(const Tensor&)>>> grad_hooks;
  unsigned next_hook_handle = 0;
  /// Guards `grad` while a backward adds into it, `grad_accumulator` while one is made and the
  /// hooks while they change (Note [Concurrent backward]).
  std::mutex mutex;
};

/// Whether ops record graph nodes on this thread (torch.is_grad_enabled()).
struct GradMode {
  static bool is_enabled();
  static void set_enabled(bool enabled);
};

/// Turns graph recording off for its lifetime (torch::NoGradGuard).
class NoGradGuard {
 public:
  NoGradGuard() : previous_(GradMode::is_enabled()) { GradMode::set_enabled(false); }
  ~NoGradGuard() { GradMode::set_enabled(previous_); }
  NoGradGuard(const NoGradGuard&) = delete;
  NoGradGuard& operator=(const NoGradGuard&) = delete;

 private:
  bool previous_;
};

/// Sets graph recording on or off for its lifetime (libtorch's AutoGradMode): `AutoGradMode
/// enable(true)` records inside a NoGradGuard, as a function taking gradients of its own must.
class AutoGradMode {
 public:
  explicit AutoGradMode(bool enabled) : previous_(GradMode::is_enabled()) { GradMode::set_enabled(enabled); }
  ~AutoGradMode() { GradMode::set_enabled(previous_); }
  AutoGradMode(const AutoGradMode&) = delete;
  AutoGradMode& operator=(const AutoGradMode&) = delete;

 private:
  bool previous_;
};

namespace autograd {
/// Whether the calling thread is running a backward pass (the ledger's phase).
bool in_backward();
/// Marks a backward pass on this thread for its lifetime.
class BackwardPhaseGuard {
 public:
  BackwardPhaseGuard();
  ~BackwardPhaseGuard();
  BackwardPhaseGuard(const BackwardPhaseGuard&) = delete;
  BackwardPhaseGuard& operator=(const BackwardPhaseGuard&) = delete;

 private:
  bool previous_;
};
/// The next node sequence number.
uint64_t next_sequence_nr();
/// The edge a use of `t` contributes: its grad_fn, or its leaf accumulator, or none.
Edge gradient_edge(const Tensor& t);
}  // namespace autograd

}  // namespace tally
