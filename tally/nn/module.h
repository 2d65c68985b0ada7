#pragma once
// nn::Module: a tree of named parameters, buffers and submodules (torch::nn::Module).
//
// A module registers what it owns in order; names nest with dots ("blocks.0.attn.qkv.weight"),
// which is what state_dict() writes and the ledger attributes ops to. Submodules are held by
// shared_ptr, as in libtorch, so a layer can be shared or kept by the caller:
//
//   struct Net : nn::Module {
//     std::shared_ptr<nn::Linear> fc = register_module("fc", std::make_shared<nn::Linear>(4, 2));
//     Tensor forward(const Tensor& x) { auto s = scope(); return fc->forward(x); }
//   };
//
// Each layer's forward opens scope() first: its ops, and their backward, are then attributed to
// the module's dotted path in the ledger (core/module_path.h).

#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "tally/core/module_path.h"
#include "tally/core/ordered_dict.h"
#include "tally/core/tensor.h"
#include "tally/nn/module_holder.h"

namespace tally::nn {

/// A tensor that is a module's parameter: its storage counts as *parameters* in the memory
/// tracker and it requires grad (torch.nn.Parameter). A Parameter is a Tensor handle; the
/// tensor it is made from becomes the parameter (no copy).
class Parameter : public Tensor {
 public:
  explicit Parameter(Tensor data, bool requires_grad = true);
};

class Module {
 public:
  /// `type_name` is what printing and error messages call the module ("Linear").
  explicit Module(std::string type_name = "Module");
  virtual ~Module() = default;
  Module(const Module&) = delete;
  Module& operator=(const Module&) = delete;

  // ---- registration (in order; a name used twice, empty or with a dot is an error) ----
  /// Make `tensor` a parameter named `name` (a Parameter: parameters category, requires_grad).
  Tensor& register_parameter(std::string name, Tensor tensor, bool requires_grad = true);
  /// A tensor that is state but not a parameter (a mask, running statistics); `persistent`
  /// buffers are part of state_dict().
  Tensor& register_buffer(std::string name, Tensor tensor, bool persistent = true);
  /// Make `module` a child named `name`; returns it, so a member can be initialised in one line.
  template <class M>
  std::shared_ptr<M> register_module(std::string name, std::shared_ptr<M> module) {
    adopt(std::move(name), module);
    return module;
  }
  /// The same for a module holder (TALLY_MODULE): `fc = register_module("fc", Net(4, 8))`.
  template <class M>
  std::shared_ptr<M> register_module(std::string name, const ModuleHolder<M>& holder) {
    return register_module(std::move(name), holder.ptr());
  }

  // ---- traversal ----
  /// Parameters of this module and (with recurse) its descendants, in registration order; a
  /// tensor reachable under two names (tied weights) appears once, as in PyTorch.
  std::vector<Tensor> parameters(bool recurse = true) const;
  /// The same with dotted names.
  OrderedDict<Tensor> named_parameters(bool recurse = true) const;
  std::vector<Tensor> buffers(bool recurse = true) const;
  OrderedDict<Tensor> named_buffers(bool recurse = true) const;
  /// Direct children (a child registered under two names once, under the first, as torch's).
  std::vector<std::shared_ptr<Module>> children() const;
  OrderedDict<std::shared_ptr<Module>> named_children() const;
  /// This module (named `prefix`, "" by default) and every descendant, depth first, each module
  /// once (under its first name, as torch's); the pointers are owned by the tree (a root may live
  /// on the stack).
  OrderedDict<Module*> named_modules(const std::string& prefix = "");
  /// Elements of all parameters (each shared tensor once).
  int64_t num_parameters() const;

  // ---- state ----
  /// Parameters and persistent buffers by dotted name, detached (they share storage with the
  /// module: save them, or copy before changing them).
  StateDict state_dict() const;
  /// The names load_state_dict found missing from `state` and those in it that the module does
  /// not have (torch's _IncompatibleKeys).
  struct IncompatibleKeys {
    std::vector<std::string> missing_keys;
    std::vector<std::string> unexpected_keys;
  };
  /// Copy `state` into the parameters and persistent buffers (no autograd history). With
  /// `strict`, a name missing from `state` or not in the module is an error; a shape mismatch is
  /// always one. One error names every problem found, and a refused load changes nothing. Values
  /// are converted to each tensor's dtype. Returns the names a non-strict load left out.
  IncompatibleKeys load_state_dict(const StateDict& state, bool strict = true);

  // ---- mode, dtype, gradients ----
  /// Training mode for this module and its descendants (Dropout is active only in training).
  virtual void train(bool on = true);
  void eval() { train(false); }
  bool is_training() const { return training_; }
  /// Convert floating parameters and buffers to `dtype` in place (their handles stay valid);
  /// gradients are dropped.
  void to(Dtype dtype, bool non_blocking = false);
  /// Move every parameter and buffer to `device` (and, with a dtype, convert the floating ones),
  /// as libtorch's Module::to: handles stay valid, gradients are dropped.
  void to(Device device, bool non_blocking = false);
  void to(Device device, Dtype dtype, bool non_blocking = false);
  /// Clear the gradients of all parameters: released (set_to_none) or zeroed in place.
  void zero_grad(bool set_to_none = true);

  // ---- forward hooks (PyTorch's register_forward_pre_hook and register_forward_hook) ----
  /// Runs before forward when the module is called, `m(x)` (as PyTorch's run from __call__, not
  /// from .forward); a defined tensor it returns replaces the input.
  using ForwardPreHook = std::function<Tensor(Module& module, const Tensor& input)>;
  /// Runs after forward likewise; a defined tensor it returns replaces the output.
  using ForwardHook = std::function<Tensor(Module& module, const Tensor& input, const Tensor& output)>;
  /// Hooks of each kind run in registration order. Returns a handle for remove_forward_hook.
  unsigned register_forward_pre_hook(ForwardPreHook hook);
  unsigned register_forward_hook(ForwardHook hook);
  /// Remove a hook of either kind; ValueError for a handle this module does not hold.
  void remove_forward_hook(unsigned handle);
  /// forward(input) with the hooks around it: what calling a module does (Layer's operator(),
  /// Sequential, a module holder's operator()).
  template <class Forward>
  Tensor call_with_hooks(const Tensor& input, Forward&& forward) {
    if (pre_hooks_.empty() && post_hooks_.empty()) return forward(input);  // the common case, no copies
    Tensor in = input;
    for (const auto& [handle, hook] : pre_hooks_)
      if (Tensor replaced = hook(*this, in); replaced.defined()) in = replaced;
    Tensor out = forward(in);
    for (const auto& [handle, hook] : post_hooks_)
      if (Tensor replaced = hook(*this, in, out); replaced.defined()) out = replaced;
    return out;
  }

  /// The name this module's forward opens in the ledger's module path: its registered name in
  /// its parent ("" for a root), prefixed by the names of list containers between them, which
  /// have no forward of their own ("layers.0").
  const std::string& name() const { return name_; }
  const std::string& type_name() const { return type_name_; }

 protected:
  /// For containers without a forward (ModuleList): children's scope names include this one's.
  void make_transparent() { transparent_ = true; }
  /// Opens this module's name in the ledger's module path for the lifetime of the returned
  /// object: call it first thing in forward.
  ModuleScope scope() const { return ModuleScope(name_); }

 private:
  void adopt(std::string name, std::shared_ptr<Module> module);
  void convert(std::optional<Device> device, std::optional<Dtype> dtype, bool non_blocking);
  void check_new_name(const std::string& name) const;
  template <class F>
  void visit(const std::string& prefix, bool recurse, F&& f) const;

  std::string type_name_;
  std::string name_;
  bool training_ = true;
  bool transparent_ = false;
  OrderedDict<Tensor> parameters_{"parameter"};
  OrderedDict<Tensor> buffers_{"buffer"};
  std::vector<std::string> non_persistent_;
  OrderedDict<std::shared_ptr<Module>> children_{"submodule"};
  std::vector<std::pair<unsigned, ForwardPreHook>> pre_hooks_;
  std::vector<std::pair<unsigned, ForwardHook>> post_hooks_;
  unsigned next_hook_ = 0;
};

}  // namespace tally::nn
