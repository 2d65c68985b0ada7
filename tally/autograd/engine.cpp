// The backward engine: walk the graph from the root in dependency order, sum the gradients
// arriving at each node, run its rule, and free the graph unless asked to keep it.

#include <map>
#include <queue>
#include <unordered_map>
#include <vector>

#include "tally/autograd/engine.h"
#include "tally/autograd/accumulate_grad.h"
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

/// How one backward pass runs.
struct PassOptions {
  bool retain_graph = false;
  bool create_graph = false;  // Note [Higher-order gradients]
  /// autograd::grad: the targets' gradients are returned, and no grad() is written.
  bool capture_only = false;
};

/// What the engine knows of one node: how many edges into it are still to run, the gradient of
/// its output summed so far, whether its rule runs, and which targets its gradient is.
struct NodeTask {
  int dependencies = 0;
  Tensor grad;
  bool runs = true;
  std::vector<size_t> targets;
};
using autograd::add_into;
using Tasks = std::unordered_map<Node*, NodeTask>;

/// Visits every node reachable from the roots once, depth first: each gets an entry in `map`
/// (made on the first visit), and on_edge(entry, from) runs for every edge into it.
template <class Map, class OnEdge>
void walk_graph(const std::vector<Node*>& roots, Map& map, OnEdge on_edge) {
  std::vector<Node*> stack;
  for (Node* r : roots)
    if (map.try_emplace(r).second) stack.push_back(r);
  while (!stack.empty()) {
    Node* n = stack.back();
    stack.pop_back();
    for (const Edge& e : n->next_edges) {
      if (!e.node) continue;
      auto [it, first_visit] = map.try_emplace(e.node.get());
      on_edge(it->second, n);
      if (first_visit) stack.push_back(e.node.get());
    }
  }
}

/// A task for every node reachable from the roots. With targets (autograd::grad's inputs,
/// backward's `inputs`), only the nodes on a path to one are kept, and only those with a kept
/// node below them run their rule (a target leaf's accumulator runs unless capture_only); the
/// dependency counts are the edges between kept nodes whose source runs.
Tasks plan(const std::vector<Node*>& roots, const std::vector<Node*>& targets, bool capture_only) {
  if (targets.empty()) {  // every node runs: one map entry per node, counting the edges into it
    Tasks tasks;
    tasks.reserve(1024);
    walk_graph(roots, tasks, [](NodeTask& task, Node*) { task.dependencies++; });
    return tasks;
  }
  std::unordered_map<Node*, std::vector<Node*>> parents;
  parents.reserve(1024);
  walk_graph(roots, parents, [](std::vector<Node*>& of, Node* from) { of.push_back(from); });
  std::vector<Node*> stack;
  Tasks tasks;
  tasks.reserve(parents.size());
  for (size_t i = 0; i < targets.size(); ++i) {
    if (!parents.contains(targets[i])) continue;  // not in this graph: its gradient stays undefined
    tasks[targets[i]].targets.push_back(i);
    stack.push_back(targets[i]);
  }
  while (!stack.empty()) {  // everything above a target is kept
    Node* n = stack.back();
    stack.pop_back();
    for (Node* p : parents[n])
      if (tasks.try_emplace(p).second) stack.push_back(p);
  }
  for (auto& [n, task] : tasks) {
    task.runs = false;
    for (const Edge& e : n->next_edges)
      if (e.node && tasks.contains(e.node.get())) task.runs = true;
    if (n->next_edges.empty() && !task.targets.empty() && !capture_only) task.runs = true;  // a target leaf's accumulator
  }
  for (auto& [n, task] : tasks) {
    if (!task.runs) continue;
    for (const Edge& e : n->next_edges)
      if (e.node) {
        auto it = tasks.find(e.node.get());
        if (it != tasks.end()) it->second.dependencies++;
      }
  }
  return tasks;
}

/// The gradient after the tensor's hooks (Tensor::register_hook), in registration order.
Tensor run_grad_hooks(AutogradMeta& meta, Tensor grad) {
  std::vector<std::pair<unsigned, std::function<Tensor(const Tensor&)>>> hooks;
  {
    std::lock_guard lock(meta.mutex);
    hooks = meta.grad_hooks;
  }
  for (const auto& [handle, hook] : hooks) {
    Tensor replaced = hook(grad);
    if (!replaced.defined()) continue;
    TALLY_CHECK(replaced.sizes() == grad.sizes() && replaced.dtype() == grad.dtype(), "hook ", handle, " returned a gradient of shape ",
                replaced.sizes(), " and dtype ", dtype_name(replaced.dtype()), " for one of shape ", grad.sizes(), " and dtype ",
                dtype_name(grad.dtype()));
    grad = std::move(replaced);
  }
  return grad;
}

/// Adds `grad` into a non-leaf's grad() (retain_grad, or backward's `inputs`); a first gradient
/// is copied row-major, as PyTorch's retain_grad copies it.
void keep_grad(AutogradMeta& meta, const Tensor& grad, bool create_graph) {
  std::lock_guard lock(meta.mutex);
  add_into(meta.grad, meta.grad.defined() || create_graph ? grad : grad.clone(MemoryFormat::Contiguous));
}

/// One node's step: the gradients of its inputs. Under the node's mutex, so that a node two
/// threads' graphs share is never released under the other's apply (Note [Concurrent backward]).
TensorList run_node(Node& node, const Tensor& grad, bool retain_graph) {
  std::lock_guard lock(node.mutex);
  TALLY_CHECK(!node.released, kFreedGraphMessage);
  TensorList grads;
  {
    ModulePathOverride where(node.module_path);
    grads = node.apply(grad);
  }
  if (!retain_graph) node.release();
  return grads;
}

/// Runs a backward pass from `roots` seeded with `seeds`. With targets, captured(i, grad) gets
/// the gradient of target i where one arrives (after the tensor's hooks).
template <class Captured>
void run_pass(const TensorList& roots, const TensorList& seeds, const TensorList& targets, const PassOptions& options, Captured captured) {
  std::vector<std::shared_ptr<Node>> root_nodes;
  std::vector<Node*> root_ptrs, target_ptrs;
  for (const Tensor& r : roots) {
    root_nodes.push_back(autograd::gradient_edge(r).node);
    root_ptrs.push_back(root_nodes.back().get());
  }
  std::vector<std::shared_ptr<Node>> target_nodes;  // kept alive: a leaf's accumulator may be new
  for (const Tensor& t : targets) {
    target_nodes.push_back(autograd::gradient_edge(t).node);
    target_ptrs.push_back(target_nodes.back().get());
  }
  Tasks tasks = plan(root_ptrs, target_ptrs, options.capture_only);
  AutoGradMode grad_mode(options.create_graph);  // a pass records itself only with create_graph
  autograd::BackwardPhaseGuard phase;
  for (size_t i = 0; i < roots.size(); ++i) {
    auto it = tasks.find(root_ptrs[i]);
    if (it == tasks.end()) continue;  // leads to no target
    add_into(it->second.grad, seeds[i]);
  }
  // Ready nodes, latest-created first (as PyTorch orders them).
  auto later = [](const std::shared_ptr<Node>& a, const std::shared_ptr<Node>& b) { return a->sequence_nr < b->sequence_nr; };
  std::priority_queue<std::shared_ptr<Node>, std::vector<std::shared_ptr<Node>>, decltype(later)> ready(later);
  for (const std::shared_ptr<Node>& r : root_nodes) {
    auto it = tasks.find(r.get());
    if (it != tasks.end() && it->second.dependencies == 0 && it->second.grad.defined()) {
      it->second.dependencies = -1;  // queued (a root given twice is queued once)
      ready.push(r);
    }
  }
  while (!ready.empty()) {
    std::shared_ptr<Node> node = ready.top();
    ready.pop();
    NodeTask& task = tasks[node.get()];
    Tensor grad = std::move(task.grad);
    if (std::shared_ptr<AutogradMeta> meta = node->output_meta.lock()) {
      grad = run_grad_hooks(*meta, std::move(grad));
      if (meta->retains_grad && !options.capture_only) keep_grad(*meta, grad, options.create_graph);
    }
    for (size_t i : task.targets) captured(i, grad);
    if (!task.runs) continue;
    const TensorList grads = run_node(*node, grad, options.retain_graph);
    for (size_t i = 0; i < node->next_edges.size(); ++i) {
      const Edge& e = node->next_edges[i];
      if (!e.node) continue;
      auto it = tasks.find(e.node.get());
      if (it == tasks.end()) continue;
      NodeTask& next = it->second;
      if (i < grads.size() && grads[i].defined()) add_into(next.grad, grads[i]);
      // A node runs once every edge into it has run, and only if some gradient reached it.
      if (--next.dependencies == 0 && next.grad.defined()) ready.push(e.node);
    }
  }
}

/// The seeds of a pass: grad_outputs checked against the outputs, ones where none is given.
TensorList seeds_for(const TensorList& outputs, const TensorList& grad_outputs) {
  TALLY_CHECK(grad_outputs.empty() || grad_outputs.size() == outputs.size(), "grad requires one grad_output per output: got ",
              grad_outputs.size(), " for ", outputs.size(), " outputs");
  TensorList seeds;
  for (size_t i = 0; i < outputs.size(); ++i) {
    const Tensor& out = outputs[i];
    TALLY_CHECK(out.defined() && out.requires_grad(), "element ", i, " of tensors does not require grad and does not have a grad_fn");
    const Tensor g = i < grad_outputs.size() ? grad_outputs[i] : Tensor();
    if (!g.defined()) {
      TALLY_CHECK(out.numel() == 1, "grad can be implicitly created only for scalar outputs (got a tensor of shape ", out.sizes(), ")");
      seeds.push_back(ones_like(out));
      continue;
    }
    TALLY_CHECK(g.sizes() == out.sizes(), "Mismatch in shape: grad_output[", i, "] has a shape of ", g.sizes(), " and output[", i,
                "] has a shape of ", out.sizes(), ".");
    seeds.push_back(g.dtype() == out.dtype() ? g : g.to(out.dtype()));
  }
  return seeds;
}

/// A tensor's list of hooks of one kind (AutogradMeta's grad_hooks, post_accumulate_grad_hooks).
template <class Hook>
using HookList = std::vector<std::pair<unsigned, Hook>> AutogradMeta::*;

/// Adds `hook` to one of the tensor's lists, under its lock; returns its handle.
template <class Hook>
unsigned add_hook(AutogradMeta& meta, HookList<Hook> list, Hook hook) {
  std::lock_guard lock(meta.mutex);
  const unsigned handle = meta.next_hook_handle++;
  (meta.*list).emplace_back(handle, std::move(hook));
  return handle;
}

/// Removes the hook of `handle` from one of the tensor's lists; ValueError from `op` if none.
template <class Hook>
void remove_hook_from(AutogradMeta* meta, HookList<Hook> list, unsigned handle, const char* op) {
  bool removed = false;
  if (meta) {
    std::lock_guard lock(meta->mutex);
    removed = std::erase_if(meta->*list, [&](const auto& h) { return h.first == handle; }) > 0;
  }
  TALLY_CHECK(removed, op, ": this tensor holds no hook with handle ", handle);
}

void check_inputs(const TensorList& inputs) {
  for (const Tensor& t : inputs)
    TALLY_CHECK(t.defined() && t.requires_grad(), "One of the differentiated Tensors does not require grad");
}

}  // namespace

bool Tensor::requires_grad() const { return impl().autograd && impl().autograd->requires_grad; }

Tensor& Tensor::requires_grad_(bool requires_grad) const {
  auto& meta = impl().autograd;
  if (!requires_grad) {
    TALLY_CHECK(!meta || !meta->grad_fn, "you can only change requires_grad flags of leaf variables. If you want to use "
                "a computed variable in a subgraph that doesn't require differentiation use var_no_grad = var.detach().");
    if (meta) meta->requires_grad = false;
    return const_cast<Tensor&>(*this);
  }
  TALLY_CHECK_TYPE_ERROR(is_floating_point(), "only Tensors of floating point dtype can require gradients (got ",
                         dtype_name(dtype()), ")");
  if (!meta) meta = detail::make_pooled<AutogradMeta>();
  meta->requires_grad = true;
  return const_cast<Tensor&>(*this);
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

Tensor& Tensor::mutable_grad() const {
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
  meta->grad_fn->output_meta = meta;
}

unsigned Tensor::register_post_accumulate_grad_hook(std::function<void(const Tensor&)> hook) const {
  TALLY_CHECK(requires_grad(), "cannot register a hook on a tensor that doesn't require gradient (shape ", sizes(), ")");
  TALLY_CHECK(is_leaf(), "post accumulate grad hooks cannot be registered on non-leaf tensors (grad_fn ", grad_fn()->name(), ")");
  TALLY_CHECK(hook, "register_post_accumulate_grad_hook: the hook is empty");
  return add_hook(*impl().autograd, &AutogradMeta::post_accumulate_grad_hooks, std::move(hook));
}

void Tensor::remove_post_accumulate_grad_hook(unsigned handle) const {
  remove_hook_from(impl().autograd.get(), &AutogradMeta::post_accumulate_grad_hooks, handle, "remove_post_accumulate_grad_hook");
}

unsigned Tensor::register_grad_hook(std::function<Tensor(const Tensor&)> hook) const {
  TALLY_CHECK(requires_grad(), "cannot register a hook on a tensor that doesn't require gradient (shape ", sizes(), ")");
  TALLY_CHECK(hook, "register_hook: the hook is empty");
  const std::shared_ptr<AutogradMeta>& meta = impl().autograd;
  // A non-leaf's gradient arrives at its grad_fn, which then runs the hooks; a leaf's accumulator
  // always knows its leaf.
  if (!is_leaf()) meta->grad_fn->output_meta = meta;
  return add_hook(*meta, &AutogradMeta::grad_hooks, std::move(hook));
}

void Tensor::remove_hook(unsigned handle) const { remove_hook_from(impl().autograd.get(), &AutogradMeta::grad_hooks, handle, "remove_hook"); }

void Tensor::backward(const Tensor& gradient, std::optional<bool> retain_graph, bool create_graph, const std::vector<Tensor>& inputs) const {
  autograd::backward({*this}, {gradient}, retain_graph, create_graph, inputs);
}

namespace autograd {

void backward(const TensorList& tensors, const TensorList& grad_tensors, std::optional<bool> retain_graph, bool create_graph,
              const TensorList& inputs) {
  const TensorList seeds = seeds_for(tensors, grad_tensors);
  check_inputs(inputs);
  if (create_graph)
    TALLY_WARN_ONCE("Using backward() with create_graph=True will create a reference cycle between the parameter and its gradient "
                    "which can cause a memory leak. We recommend using autograd::grad when creating the graph to avoid this. If you "
                    "have to use this function, make sure to reset the grad() of your parameters (set_grad(Tensor())) after use to "
                    "break the cycle and avoid the leak.");
  const PassOptions options{retain_graph.value_or(create_graph), create_graph, false};
  // A non-leaf among `inputs` keeps its gradient in grad(), as retain_grad would; a leaf's
  // accumulator runs as usual.
  run_pass(tensors, seeds, inputs, options, [&](size_t i, const Tensor& g) {
    if (!inputs[i].is_leaf()) keep_grad(*inputs[i].impl().autograd, g, create_graph);
  });
}

TensorList grad(const TensorList& outputs, const TensorList& inputs, const TensorList& grad_outputs, std::optional<bool> retain_graph,
                bool create_graph, bool allow_unused) {
  const TensorList seeds = seeds_for(outputs, grad_outputs);
  TALLY_CHECK(!inputs.empty(), "grad requires at least one input");
  check_inputs(inputs);
  TensorList result(inputs.size());
  const PassOptions options{retain_graph.value_or(create_graph), create_graph, true};
  run_pass(outputs, seeds, inputs, options, [&](size_t i, const Tensor& g) { add_into(result[i], g); });
  for (const Tensor& r : result)
    TALLY_CHECK(r.defined() || allow_unused,
                "One of the differentiated Tensors appears to not have been used in the graph. Set allow_unused=True if this is "
                "the desired behavior.");
  return result;
}

}  // namespace autograd

}  // namespace tally
