// Grad mode, the backward phase flag, sequence numbers, and how a tensor joins a graph.

#include <atomic>

#include "tally/autograd/accumulate_grad.h"
#include "tally/core/geometry.h"
#include "tally/ops/creation.h"
#include "tally/ops/elementwise.h"

namespace tally {

namespace {
thread_local bool tls_grad_enabled = true;
thread_local bool tls_in_backward = false;
std::atomic<uint64_t> sequence_counter{0};
}  // namespace

bool GradMode::is_enabled() { return tls_grad_enabled; }
void GradMode::set_enabled(bool enabled) { tls_grad_enabled = enabled; }

namespace autograd {

bool in_backward() { return tls_in_backward; }
BackwardPhaseGuard::BackwardPhaseGuard() : previous_(tls_in_backward) { tls_in_backward = true; }
BackwardPhaseGuard::~BackwardPhaseGuard() { tls_in_backward = previous_; }
uint64_t next_sequence_nr() { return sequence_counter++; }

}  // namespace autograd

// Note [Deep graphs]
// A graph is a chain of shared_ptrs: each node owns the nodes of its inputs. Dropping the last
// tensor of a million-op chain would run a million nested destructors and overflow the stack.
// Instead the outermost ~Node on a thread collects the input nodes in a list and releases them
// one at a time; a node destroyed from that loop only appends its own inputs to the list.
namespace {
thread_local std::vector<std::shared_ptr<Node>>* tls_nodes_to_release = nullptr;
}  // namespace

Node::~Node() {
  if (tls_nodes_to_release != nullptr) {
    for (Edge& e : next_edges)
      if (e.node) tls_nodes_to_release->push_back(std::move(e.node));
    return;
  }
  std::vector<std::shared_ptr<Node>> to_release;
  for (Edge& e : next_edges)
    if (e.node) to_release.push_back(std::move(e.node));
  if (to_release.empty()) return;
  tls_nodes_to_release = &to_release;
  while (!to_release.empty()) {
    std::shared_ptr<Node> n = std::move(to_release.back());
    to_release.pop_back();
    n.reset();  // if this was the last owner, its ~Node appends to to_release
  }
  tls_nodes_to_release = nullptr;
}

namespace autograd {

Edge gradient_edge(const Tensor& t) {
  if (!t.defined()) return {};
  const auto& meta = t.impl().autograd;
  if (!meta || !meta->requires_grad) return {};
  if (meta->grad_fn) return {meta->grad_fn, 0};
  // A leaf: every use shares one accumulator, made on first use (by one thread, when several
  // record ops on the same leaf at once).
  std::lock_guard lock(meta->mutex);
  std::shared_ptr<Node> acc = meta->grad_accumulator.lock();
  if (!acc) {
    acc = std::make_shared<AccumulateGrad>(t);
    meta->grad_accumulator = acc;
  }
  return {acc, 0};
}

AccumulateGrad::AccumulateGrad(const Tensor& leaf)
    : leaf_(leaf.impl().autograd),
      leaf_impl_(leaf.impl_ptr()),
      sizes_(leaf.sizes()),
      grad_strides_(geometry::is_non_overlapping_and_dense(leaf.sizes(), leaf.strides()) ? DimVector(leaf.strides())
                                                                                          : geometry::contiguous_strides(leaf.sizes())),
      dtype_(leaf.dtype()),
      device_(leaf.device()) {
  output_meta = leaf_;  // the leaf's hooks run on the gradient before it is added
}

bool AccumulateGrad::can_steal(const Tensor& grad) const {
  const TensorImpl& g = grad.impl();
  return grad.impl_ptr().use_count() == 1 && g.storage && g.storage.use_count() == 1 && g.storage_offset == 0 &&
         grad.dtype() == dtype_ && grad.device() == device_ && grad.sizes() == IntArrayRef(sizes_) &&
         grad.strides() == IntArrayRef(grad_strides_) && g.storage->nbytes() == grad.nbytes();
}

Tensor AccumulateGrad::copy_in_grad_layout(const Tensor& grad) const {
  Tensor copy = empty_strided(sizes_, grad_strides_, grad.options());
  copy.copy_(grad);
  copy.storage()->reset_version();  // a new tensor, as a clone would be
  return copy;
}

TensorList AccumulateGrad::apply(const Tensor& grad_output) {
  // A leaf whose requires_grad was turned off after the graph was built takes nothing, as torch's.
  const std::shared_ptr<AutogradMeta> leaf = leaf_.lock();
  if (!leaf || !leaf->requires_grad) return {};
  std::vector<std::pair<unsigned, std::function<void(const Tensor&)>>> hooks;
  {
    std::lock_guard lock(leaf->mutex);  // several threads' backward passes may add at once
    if (GradMode::is_enabled()) {
      // create_graph (Note [Higher-order gradients]): the gradient keeps its history, so the
      // sum is out of place.
      add_into(leaf->grad, grad_output);
    } else if (!leaf->grad.defined()) {
      // The incoming tensor itself where nothing else holds it (the usual case: a weight's
      // gradient made for it), else a private copy.
      leaf->grad = can_steal(grad_output) ? grad_output.detach() : copy_in_grad_layout(grad_output);
      leaf->grad.storage()->set_category(MemoryCategory::Gradients);
    } else {
      leaf->grad.add_(grad_output);
    }
    hooks = leaf->post_accumulate_grad_hooks;
  }
  // Outside the lock: a hook reads (or clears) the leaf's grad().
  if (!hooks.empty()) {
    if (std::shared_ptr<TensorImpl> impl = leaf_impl_.lock()) {
      const Tensor tensor(std::move(impl));
      for (const auto& [handle, hook] : hooks) hook(tensor);
    }
  }
  return {};
}

}  // namespace autograd
}  // namespace tally
