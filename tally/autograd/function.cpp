// Custom autograd functions (function.h, Note [Custom functions]): the context and the node.

#include "tally/autograd/function.h"

#include <cxxabi.h>

#include <algorithm>
#include <cstdlib>

#include "tally/error/error.h"
#include "tally/ops/apply.h"

namespace tally::autograd {

namespace {

using ops::detail::version_of;

bool listed(const std::vector<const TensorImpl*>& list, const Tensor& t) {
  return t.defined() && std::find(list.begin(), list.end(), &t.impl()) != list.end();
}

/// The node a custom function leaves in the graph: its backward is the function's.
struct FunctionNode final : Node {
  std::shared_ptr<AutogradContext> ctx;
  FunctionGraph::Backward backward = nullptr;
  FunctionGraph::BackwardCost backward_cost = nullptr;
  std::string node_name;
  std::vector<std::vector<int64_t>> input_sizes;  // per argument, for the check of backward's gradients

  std::string name() const override { return node_name; }
  TensorList apply(const Tensor& grad_output) override {
    const std::vector<Tensor>& saved = FunctionGraph::saved(*ctx);
    for (size_t i = 0; i < saved.size(); ++i)
      ops::detail::check_saved_version(saved[i], FunctionGraph::saved_versions(*ctx)[i], *this, "saved tensor", i);
    TensorList grads = backward_cost ? FunctionGraph::run_declared(node_name, backward_cost(ctx.get(), {grad_output}),
                                                                   [&] { return backward(ctx.get(), {grad_output}); })
                                     : backward(ctx.get(), {grad_output});
    TALLY_CHECK(grads.size() == next_edges.size(), "function ", node_name, " returned an incorrect number of gradients (expected ",
                next_edges.size(), ", got ", grads.size(), "): one per argument of forward, an undefined Tensor for a "
                "non-tensor argument");
    for (size_t i = 0; i < grads.size(); ++i) {
      if (!next_edges[i].node) {  // no gradient wanted here: whatever backward gave is dropped
        grads[i] = Tensor();
        continue;
      }
      if (!grads[i].defined()) continue;
      TALLY_CHECK(grads[i].sizes() == IntArrayRef(input_sizes[i]), "function ", node_name, " returned an invalid gradient at index ", i,
                  " - got ", grads[i].sizes(), " but expected shape compatible with ", IntArrayRef(input_sizes[i]));
    }
    return grads;
  }
  void release() override {
    FunctionGraph::release(*ctx);
    released = true;
  }
};

}  // namespace

void AutogradContext::save_for_backward(TensorList tensors) {
  saved_ = std::move(tensors);
  saved_versions_.clear();
  for (const Tensor& t : saved_) saved_versions_.push_back(version_of(t));
}

TensorList AutogradContext::get_saved_variables() const {
  TALLY_CHECK(!released_, "Trying to backward through the graph a second time (or directly access saved tensors after they have "
              "already been freed) in ", function_name_, ". Specify retain_graph=true if you need to backward through the graph a "
              "second time or if you need to access saved tensors after calling backward.");
  return saved_;
}

void AutogradContext::mark_dirty(const TensorList& inputs) {
  for (const Tensor& t : inputs)
    if (t.defined()) dirty_.push_back(&t.impl());
}

void AutogradContext::mark_non_differentiable(const TensorList& outputs) {
  for (const Tensor& t : outputs)
    if (t.defined()) non_differentiable_.push_back(&t.impl());
}

bool AutogradContext::needs_input_grad(size_t index) const {
  TALLY_CHECK_INDEX(index < needs_input_grad_.size(), "needs_input_grad: index ", index, " is out of range for ", function_name_,
                    "'s ", needs_input_grad_.size(), " arguments");
  return needs_input_grad_[index];
}

std::shared_ptr<AutogradContext> FunctionGraph::begin(std::string name, const std::vector<Tensor>& args) {
  auto ctx = std::make_shared<AutogradContext>();
  ctx->function_name_ = std::move(name);
  for (const Tensor& t : args) ctx->needs_input_grad_.push_back(GradMode::is_enabled() && t.defined() && t.requires_grad());
  return ctx;
}

void FunctionGraph::finish(const std::shared_ptr<AutogradContext>& ctx, const std::vector<Tensor>& args,
                           const std::vector<Tensor*>& outputs, Backward backward, BackwardCost backward_cost,
                           const ModulePath& path) {
  const auto& needs = ctx->needs_input_grad_;
  if (std::none_of(needs.begin(), needs.end(), [](bool b) { return b; })) return;
  std::vector<Tensor*> differentiable;
  for (Tensor* out : outputs)
    if (out->defined() && out->is_floating_point() && !listed(ctx->non_differentiable_, *out)) differentiable.push_back(out);
  TALLY_CHECK(differentiable.size() <= 1, "custom function ", ctx->function_name_, " returned ", differentiable.size(),
              " differentiable outputs; tally's graph nodes have one output each: mark the others with "
              "ctx->mark_non_differentiable, or split the function in two");
  if (differentiable.empty()) return;
  Tensor& out = *differentiable.front();
  const bool dirty = listed(ctx->dirty_, out);
  const auto input = std::find_if(args.begin(), args.end(), [&](const Tensor& a) { return a.defined() && a.is_same(out); });
  if (dirty) {
    TALLY_CHECK(input == args.end() || !(input->is_leaf() && input->requires_grad()), "a leaf Variable that requires grad is being used "
                "in an in-place operation (", ctx->function_name_, " marked it dirty). Wrap the call in tally::NoGradGuard.");
  } else if (input != args.end()) {
    out = out.detach();  // an input returned as it is: a new handle, so the input keeps its own history
  }
  // A saved output is kept without history, so that the node does not own itself.
  for (Tensor& saved : ctx->saved_)
    if (saved.defined() && saved.is_same(out)) saved = out.detach();

  auto node = std::make_shared<FunctionNode>();
  node->ctx = ctx;
  node->backward = backward;
  node->backward_cost = backward_cost;
  node->node_name = ctx->function_name_ + "Backward";
  node->sequence_nr = next_sequence_nr();
  node->module_path = path;
  for (size_t i = 0; i < args.size(); ++i) {
    node->next_edges.push_back(needs[i] ? gradient_edge(args[i]) : Edge{});
    node->input_sizes.emplace_back(needs[i] ? std::vector<int64_t>(args[i].sizes().begin(), args[i].sizes().end()) : std::vector<int64_t>{});
  }
  auto meta = std::make_shared<AutogradMeta>();
  meta->requires_grad = true;
  meta->grad_fn = std::move(node);
  out.impl().autograd = std::move(meta);
}

namespace detail {
std::string function_name(const std::type_info& type) {
  int status = 0;
  char* demangled = abi::__cxa_demangle(type.name(), nullptr, nullptr, &status);
  std::string name = status == 0 && demangled ? demangled : type.name();
  std::free(demangled);
  // "ns::(anonymous namespace)::Cube" -> "Cube": the node's name is the class's own, as PyTorch's.
  if (const size_t colon = name.rfind("::"); colon != std::string::npos) name = name.substr(colon + 2);
  return name;
}
}  // namespace detail

}  // namespace tally::autograd
