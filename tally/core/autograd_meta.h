#pragma once
// The autograd graph's data: nodes, edges, the per-tensor autograd slot, grad mode. These live
// in core because every tensor carries the slot and apply() (tally/ops/apply.h) attaches nodes;
// the engine that walks the graph is tally/autograd/engine.cpp.

#include <cstdint>
#include <memory>
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
  /// A non-leaf output that asked for retain_grad(): its grad is stored when this node runs.
  std::weak_ptr<struct AutogradMeta> retained_output;
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
