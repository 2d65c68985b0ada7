// The backward engine: walk the graph from the root in dependency order, sum the gradients
// arriving at each node, run its rule, and free the graph unless asked to keep it.

#include <map>
#include <queue>
#include <unordered_map>
#include <vector>

#include "tally/core/autograd_meta.h"
#include "tally/error/warning.h"
#include "tally/ops/creation.h"
#include "tally/ops/elementwise.h"

namespace tally {

namespace {

constexpr const char* kFreedGraphMessage =
    "Trying to backward through the graph a second time (or directly access saved tensors after they have already "
    "been freed). Saved intermediate values of the graph are freed when you call .backward() or autograd.grad(). "
    "Specify retain_graph=True if you need to backward through the graph a second time or if you need to access "
    "saved tensors after calling backward.";

/// What the engine knows of one node: how many edges into it are still to run, and the gradient
/// of its output summed so far. One map entry per node, so an edge costs one lookup.
struct NodeTask {
  int dependencies = 0;
  Tensor grad;
};
using Tasks = std::unordered_map<Node*, NodeTask>;

/// A task for every node reachable from root, with the number of graph edges into it.
Tasks count_dependencies(Node* root) {
  Tasks tasks;
  tasks.reserve(1024);
  tasks.try_emplace(root);
  std::vector<Node*> stack{root};
  while (!stack.empty()) {
    Node* n = stack.back();
    stack.pop_back();
    for (const Edge& e : n->next_edges) {
      if (!e.node) continue;
      auto [it, first_visit] = tasks.try_emplace(e.node.get());
      it->second.dependencies++;
      if (first_visit) stack.push_back(e.node.get());
    }
  }
  return tasks;
}

/// One node's step: the gradients of its inputs. Under the node's mutex, so that a node two
/// threads' graphs share is never released under the other's apply (Note [Concurrent backward]).
TensorList run_node(Node& node, Tensor grad, bool retain_graph) {
  std::lock_guard lock(node.mutex);
  TALLY_CHECK(!node.released, kFreedGraphMessage);
  if (auto retained = node.retained_output.lock()) {
    // A first gradient is copied row-major, as PyTorch's retain_grad copies it.
    retained->grad = retained->grad.defined() ? retained->grad + grad : grad.clone(MemoryFormat::Contiguous);
  }
  TensorList grads;
  {
    ModulePathOverride where(node.module_path);
    grads = node.apply(grad);
  }
  if (!retain_graph) node.release();
  return grads;
}

void run_backward(const Tensor& root, const Tensor& root_grad, bool retain_graph) {
  std::shared_ptr<Node> root_node = autograd::gradient_edge(root).node;
  Tasks tasks = count_dependencies(root_node.get());
  tasks[root_node.get()].grad = root_grad;
  // Ready nodes, latest-created first (as PyTorch orders them).
  auto later = [](const std::shared_ptr<Node>& a, const std::shared_ptr<Node>& b) { return a->sequence_nr < b->sequence_nr; };
  std::priority_queue<std::shared_ptr<Node>, std::vector<std::shared_ptr<Node>>, decltype(later)> ready(later);
  ready.push(root_node);
  NoGradGuard no_grad;
  autograd::BackwardPhaseGuard phase;
  while (!ready.empty()) {
    std::shared_ptr<Node> node = ready.top();
    ready.pop();
    const TensorList grads = run_node(*node, std::move(tasks[node.get()].grad), retain_graph);
    for (size_t i = 0; i < node->next_edges.size(); ++i) {
      const Edge& e = node->next_edges[i];
      if (!e.node) continue;
      NodeTask& task = tasks[e.node.get()];
      if (i < grads.size() && grads[i].defined()) task.grad = task.grad.defined() ? task.grad + grads[i] : grads[i];
      // A node runs once every edge into it has run, and only if some gradient reached it.
      if (--task.dependencies == 0 && task.grad.defined()) ready.push(e.node);
    }
  }
}

}  // namespace

bool Tensor::requires_grad() const { return impl().autograd && impl().autograd->requires_grad; }

Tensor& Tensor::requires_grad_(bool requires_grad) {
  auto& meta = impl().autograd;
  if (!requires_grad) {
    TALLY_CHECK(!meta || !meta->grad_fn, "you can only change requires_grad flags of leaf variables. If you want to use "
                "a computed variable in a subgraph that doesn't require differentiation use var_no_grad = var.detach().");
    if (meta) meta->requires_grad = false;
    return *this;
  }
  TALLY_CHECK_TYPE_ERROR(is_floating_point(), "only Tensors of floating point dtype can require gradients (got ",
                         dtype_name(dtype()), ")");
  if (!meta) meta = detail::make_pooled<AutogradMeta>();
  meta->requires_grad = true;
  return *this;
}

const Tensor& Tensor::grad() const {
  static const Tensor undefined;
  const auto& meta = impl().autograd;
  if (meta && meta->grad_fn && !meta->retains_grad)
    TALLY_WARN_ONCE("The .grad attribute of a Tensor that is not a leaf Tensor is being accessed. Its .grad attribute won't be "
                    "populated during backward(). If you indeed want the .grad field to be populated for a non-leaf Tensor, use "
                    ".retain_grad() on the non-leaf Tensor. If you access the non-leaf Tensor by mistake, make sure you access the "
                    "leaf Tensor instead (grad_fn ", meta->grad_fn->name(), ", shape ", sizes(), ")");
  return meta ? meta->grad : undefined;
}

Tensor& Tensor::mutable_grad() {
  auto& meta = impl().autograd;
  if (!meta) meta = detail::make_pooled<AutogradMeta>();
  return meta->grad;
}

void Tensor::set_grad(const Tensor& grad) {
  auto& meta = impl().autograd;
  if (!meta) meta = detail::make_pooled<AutogradMeta>();
  if (grad.defined()) {
    TALLY_CHECK(grad.sizes() == sizes(), "assigned grad has data of a different size: ", grad.sizes(), " vs ", sizes());
    // torch's grad setter refuses these too: the next backward would accumulate into a tensor of
    // another dtype (float64 became the leaf's gradient dtype) or fail inside add_ (int64).
    TALLY_CHECK_TYPE_ERROR(grad.dtype() == dtype(), "assigned grad has data of a different type: ", dtype_name(grad.dtype()), " for a ",
                           dtype_name(dtype()), " tensor");
    TALLY_CHECK(grad.device() == device(), "assigned grad has data located on a different device: ", grad.device().str(), " for a tensor on ",
                device().str());
  }
  meta->grad = grad;
}

bool Tensor::is_leaf() const { return !impl().autograd || !impl().autograd->grad_fn; }

std::shared_ptr<Node> Tensor::grad_fn() const { return impl().autograd ? impl().autograd->grad_fn : nullptr; }

void Tensor::retain_grad() {
  TALLY_CHECK(requires_grad(), "can't retain_grad on Tensor that has requires_grad=False");
  if (is_leaf()) return;  // leaves keep their grad anyway
  auto& meta = impl().autograd;
  meta->retains_grad = true;
  meta->grad_fn->retained_output = meta;
}

unsigned Tensor::register_post_accumulate_grad_hook(std::function<void(const Tensor&)> hook) const {
  TALLY_CHECK(requires_grad(), "cannot register a hook on a tensor that doesn't require gradient (shape ", sizes(), ")");
  TALLY_CHECK(is_leaf(), "post accumulate grad hooks cannot be registered on non-leaf tensors (grad_fn ", grad_fn()->name(), ")");
  TALLY_CHECK(hook, "register_post_accumulate_grad_hook: the hook is empty");
  AutogradMeta& meta = *impl().autograd;
  std::lock_guard lock(meta.mutex);
  const unsigned handle = meta.next_hook_handle++;
  meta.post_accumulate_grad_hooks.emplace_back(handle, std::move(hook));
  return handle;
}

void Tensor::remove_post_accumulate_grad_hook(unsigned handle) const {
  const auto& meta = impl().autograd;
  bool removed = false;
  if (meta) {
    std::lock_guard lock(meta->mutex);
    removed = std::erase_if(meta->post_accumulate_grad_hooks, [&](const auto& h) { return h.first == handle; }) > 0;
  }
  TALLY_CHECK(removed, "remove_post_accumulate_grad_hook: this tensor holds no hook with handle ", handle);
}

void Tensor::backward(const Tensor& gradient, bool retain_graph) const {
  TALLY_CHECK(requires_grad(), "element 0 of tensors does not require grad and does not have a grad_fn");
  Tensor g = gradient;
  if (!g.defined()) {
    TALLY_CHECK(numel() == 1, "grad can be implicitly created only for scalar outputs (got a tensor of shape ", sizes(), ")");
    g = ones_like(*this);
  } else {
    TALLY_CHECK(g.sizes() == sizes(), "Mismatch in shape: grad_output[0] has a shape of ", g.sizes(),
                " and output[0] has a shape of ", sizes(), ".");
    g = g.to(dtype());
  }
  if (is_leaf()) {  // backward on a leaf: its gradient is the seed itself
    NoGradGuard no_grad;  // as run_backward: a seed that requires grad is taken as a value
    autograd::gradient_edge(*this).node->apply(g);
    return;
  }
  run_backward(*this, g, retain_graph);
}

}  // namespace tally
