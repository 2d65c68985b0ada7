#pragma once
// Custom autograd functions, as libtorch writes them (torch::autograd::Function<T>):
//
//   struct Cube : tally::autograd::Function<Cube> {
//     static Tensor forward(AutogradContext* ctx, const Tensor& x) {
//       ctx->save_for_backward({x});
//       return x * x * x;
//     }
//     static TensorList backward(AutogradContext* ctx, TensorList grads) {
//       const Tensor x = ctx->get_saved_variables()[0];
//       return {grads[0] * 3 * x * x};
//     }
//   };
//   Tensor y = Cube::apply(x);
//
// Note [Custom functions]
// apply() runs forward with graph recording off, so the ops inside it are on the ledger (their
// FLOPs and bytes are real) but record no nodes; then, when an input requires grad, it attaches one
// node, "CubeBackward", whose backward is T::backward. Both run inside a ModuleScope named after the
// function, so the ledger's per-module rows put the function's forward and backward ops under its
// name. backward returns one gradient per argument of forward (an undefined Tensor for a
// non-tensor argument or one that needs none), as libtorch's must. A saved tensor changed in place
// before backward is PyTorch's error, naming it. Outputs: a Tensor, or a TensorList of which at
// most one output is differentiable (the others marked non-differentiable, or not floating): the
// engine's nodes have one output each; several differentiable outputs are refused by name.
//
// Note [Declared cost]
// The ledger sees ops, so a function that computes outside them (a loop over data_ptr(), a
// library call) costs nothing there unless it says what it costs. T may declare either or both:
//   static ops::Cost cost(const Args&... args);                                // forward
//   static ops::Cost backward_cost(AutogradContext* ctx, const TensorList& grads);  // backward
// A declared cost replaces the measured one for that phase: the ops inside run off the ledger,
// and the function is one row under its name (the node's, "CubeBackward", in backward) with the
// declared FLOPs and bytes and the phase's wall time, so nothing is counted twice.

#include <any>
#include <chrono>
#include <cstddef>
#include <memory>
#include <string>
#include <type_traits>
#include <typeinfo>
#include <unordered_map>
#include <utility>
#include <vector>

#include "tally/core/autograd_meta.h"
#include "tally/core/tensor.h"
#include "tally/ops/cost.h"

namespace tally::autograd {

/// What a custom function's forward leaves for its backward (torch::autograd::AutogradContext).
class AutogradContext {
 public:
  /// Tensors backward reads; each is checked for in-place changes when backward reads it.
  void save_for_backward(TensorList tensors);
  /// The saved tensors. ValueError after the graph was freed (a second backward without
  /// retain_graph). One changed in place since it was saved fails the node before backward runs,
  /// with the check every op's node makes (Note [Version counter]).
  TensorList get_saved_variables() const;
  /// Inputs forward changed in place (and returns): their history becomes this function's.
  void mark_dirty(const TensorList& inputs);
  /// Outputs with no gradient (indices, masks): they get no history.
  void mark_non_differentiable(const TensorList& outputs);
  /// Whether forward's argument `index` needs a gradient.
  bool needs_input_grad(size_t index) const;
  /// Anything else backward needs: numbers, flags, shapes (libtorch's saved_data, with std::any
  /// in place of IValue: std::any_cast<double>(ctx->saved_data["scale"])).
  std::unordered_map<std::string, std::any> saved_data;

 private:
  friend struct FunctionGraph;
  std::vector<Tensor> saved_;
  std::vector<uint64_t> saved_versions_;
  std::vector<const TensorImpl*> dirty_, non_differentiable_;
  std::vector<bool> needs_input_grad_;
  std::string function_name_;
  bool released_ = false;
};

/// The non-template part of Function<T>::apply (function.cpp). `args` holds forward's arguments
/// in order, each tensor's handle (an undefined Tensor for a non-tensor argument).
struct FunctionGraph {
  using Backward = TensorList (*)(AutogradContext*, TensorList);
  /// T::backward_cost, when T declares one (Note [Declared cost]).
  using BackwardCost = ops::Cost (*)(AutogradContext*, const TensorList&);
  /// A context for `name`'s forward: which arguments need a gradient.
  static std::shared_ptr<AutogradContext> begin(std::string name, const std::vector<Tensor>& args);
  /// Attaches the node to forward's differentiable output when an argument needs a gradient.
  static void finish(const std::shared_ptr<AutogradContext>& ctx, const std::vector<Tensor>& args, const std::vector<Tensor*>& outputs,
                     Backward backward, BackwardCost backward_cost, const ModulePath& path);
  /// Runs `body` off the ledger and files it as one row, `name`, of the declared `cost` with its
  /// wall time (Note [Declared cost]).
  template <class Body>
  static decltype(auto) run_declared(std::string_view name, const ops::Cost& cost, Body&& body) {
    const auto start = std::chrono::steady_clock::now();
    auto result = [&] {
      ops::OpObserverScope off_the_ledger(nullptr);
      return body();
    }();
    ops::record_op(name, cost, std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count());
    return result;
  }
  /// The name forward and backward run under on the ledger (a ModuleScope).
  static const std::string& name(const AutogradContext& ctx) { return ctx.function_name_; }
  /// The saved tensors and their versions when saved, for the node's check before backward.
  static const std::vector<Tensor>& saved(const AutogradContext& ctx) { return ctx.saved_; }
  static const std::vector<uint64_t>& saved_versions(const AutogradContext& ctx) { return ctx.saved_versions_; }
  /// After a backward without retain_graph: the saved tensors go (get_saved_variables then fails).
  static void release(AutogradContext& ctx) {
    ctx.saved_.clear();
    ctx.released_ = true;
  }
};

namespace detail {
/// The class's own name for the node ("Cube" → "CubeBackward").
std::string function_name(const std::type_info& type);
template <class A>
Tensor tensor_arg(const A& a) {
  if constexpr (std::is_same_v<std::decay_t<A>, Tensor>) return a;
  else return Tensor();
}
}  // namespace detail

/// Base of a custom function: T defines static forward(AutogradContext*, args...) returning a
/// Tensor or a TensorList, and static backward(AutogradContext*, TensorList grads) returning one
/// gradient per forward argument. Optionally `static constexpr const char* name`.
template <class T>
struct Function {
  template <class... Args>
  static auto apply(Args&&... args) {
    // Handles taken before forward runs, which may take its arguments by value and move them.
    const std::vector<Tensor> tensors{detail::tensor_arg(args)...};
    std::string name;
    if constexpr (requires { T::name; }) name = T::name;
    else name = detail::function_name(typeid(T));
    const std::shared_ptr<AutogradContext> ctx = FunctionGraph::begin(std::move(name), tensors);
    ModulePath path;
    auto out = [&] {
      ModuleScope scope(FunctionGraph::name(*ctx));
      path = current_module_path_handle();
      NoGradGuard no_grad;
      if constexpr (requires { T::cost(args...); }) {
        const ops::Cost cost = T::cost(args...);  // before forward, which may move its arguments
        return FunctionGraph::run_declared(FunctionGraph::name(*ctx), cost,
                                           [&] { return T::forward(ctx.get(), std::forward<Args>(args)...); });
      } else {
        return T::forward(ctx.get(), std::forward<Args>(args)...);
      }
    }();
    std::vector<Tensor*> outputs;
    if constexpr (std::is_same_v<decltype(out), Tensor>) outputs.push_back(&out);
    else
      for (Tensor& t : out) outputs.push_back(&t);
    FunctionGraph::BackwardCost backward_cost = nullptr;
    if constexpr (requires { &T::backward_cost; }) backward_cost = &T::backward_cost;
    FunctionGraph::finish(ctx, tensors, outputs, &T::backward, backward_cost, path);
    return out;
  }
};

}  // namespace tally::autograd
