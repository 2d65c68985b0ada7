#pragma once
// The optimizer base, with libtorch's shapes: param groups that each carry their own options,
// per-parameter state, step(), zero_grad(set_to_none), state_dict() and a strict
// load_state_dict(). Note [Optimizer state dict] gives the key scheme.
//
// A subclass (SGD, Adagrad, RMSprop, Adam, AdamW) says three things: the names and initial
// values of its state tensors, the name of its ledger row ("adamw_step"), and how to update one
// parameter. The base runs every parameter with a gradient through that update under one ledger
// row in Phase::Optimizer, with graph recording off, as PyTorch's @torch.no_grad step does.

#include <algorithm>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <unordered_map>
#include <utility>
#include <variant>
#include <vector>

#include "tally/core/ordered_dict.h"
#include "tally/core/tensor.h"
#include "tally/ops/cost.h"

namespace tally::optim {

/// Declares a hyper-parameter as libtorch's TORCH_ARG does: a private field `name_`, a getter
/// `name()` and a chaining setter `name(value)`; the declaration may end with ` = default`.
#define TALLY_OPTIM_ARG(T, name)                     \
 public:                                             \
  auto& name(const T& new_##name) {                  \
    name##_ = new_##name;                            \
    return *this;                                    \
  }                                                  \
  const T& name() const { return name##_; }          \
                                                     \
 private:                                            \
  T name##_

/// Where one hyper-parameter lives in an options object: a number or a flag.
using HyperRef = std::variant<double*, bool*>;
/// Every hyper-parameter of an options object by name, `lr` first.
using Hypers = std::vector<std::pair<std::string, HyperRef>>;

/// The hyper-parameters of one param group (libtorch's OptimizerOptions).
class OptimizerOptions {
 public:
  virtual ~OptimizerOptions() = default;
  /// A copy of the derived options.
  virtual std::unique_ptr<OptimizerOptions> clone() const = 0;
  /// Every hyper-parameter by name, `lr` first: the one list state_dict and load_state_dict walk.
  virtual Hypers hypers() = 0;
  /// Raises PyTorch's ValueError for an out-of-range value ("Invalid learning rate: -1").
  virtual void validate() const = 0;
  /// The learning rate.
  double get_lr() const;
  /// Set the learning rate (what LR schedules do).
  void set_lr(double lr);
};

/// CRTP helper giving an options class its clone() (libtorch's OptimizerCloneableOptions).
template <class Derived>
class OptimizerCloneableOptions : public OptimizerOptions {
 public:
  std::unique_ptr<OptimizerOptions> clone() const override {
    return std::make_unique<Derived>(static_cast<const Derived&>(*this));
  }
};

/// One parameter's optimizer state: how many steps it has taken (a host integer, so it costs no
/// tensor memory) and its state tensors by name ("exp_avg", "exp_avg_sq", ...).
struct OptimizerParamState {
  int64_t step = 0;
  StateDict tensors{"optimizer state"};
  /// This step's key for stochastic rounding of a bfloat16 parameter, from its index in the
  /// optimizer and `step`; set by Optimizer::step (Note [Stochastic rounding] in optim/fused.h).
  uint64_t rounding_key = 0;
  /// The state tensors made for this step: on the first step, or when an option turned on later
  /// asks for one (SGD's momentum): an SGD momentum buffer begins as the gradient, as PyTorch's.
  std::vector<std::string> created;
  bool was_created(const std::string& name) const { return std::find(created.begin(), created.end(), name) != created.end(); }
};

/// Parameters that share options (libtorch's OptimizerParamGroup); without options of its own,
/// a group takes the optimizer's defaults when it is added.
class OptimizerParamGroup {
 public:
  /// A group with the optimizer's default options.
  OptimizerParamGroup(std::vector<Tensor> params);  // NOLINT: implicit, as in libtorch
  /// A group with its own options.
  OptimizerParamGroup(std::vector<Tensor> params, std::unique_ptr<OptimizerOptions> options);
  OptimizerParamGroup(const OptimizerParamGroup& other);
  OptimizerParamGroup& operator=(const OptimizerParamGroup& other);
  OptimizerParamGroup(OptimizerParamGroup&&) = default;
  OptimizerParamGroup& operator=(OptimizerParamGroup&&) = default;

  /// Whether the group carries options.
  bool has_options() const { return options_ != nullptr; }
  /// The group's options (raises if it has none).
  OptimizerOptions& options();
  const OptimizerOptions& options() const;
  /// Replace the group's options.
  void set_options(std::unique_ptr<OptimizerOptions> options) { options_ = std::move(options); }
  /// The group's parameters.
  std::vector<Tensor>& params() { return params_; }
  const std::vector<Tensor>& params() const { return params_; }
  /// The lr before any schedule changed it (PyTorch's group['initial_lr']): the first schedule
  /// made over the group sets it, and every schedule takes it as its base lr.
  std::optional<double> initial_lr() const { return initial_lr_; }
  void set_initial_lr(double lr) { initial_lr_ = lr; }

 private:
  std::vector<Tensor> params_;
  std::unique_ptr<OptimizerOptions> options_;
  std::optional<double> initial_lr_;
};

// Note [Optimizer state dict]
// Everything is a tensor, so that the dict can go into a safetensors checkpoint as it is.
// Parameters are numbered 0, 1, ... across the groups in order (PyTorch's packing). Keys:
//   state.<i>.step              int64 0-d: steps parameter i has taken
//   state.<i>.<name>            the state tensor `name` of parameter i (present once it stepped)
//   param_groups.<g>.<hyper>    float64 0-d: each hyper-parameter of group g (a flag is 0 or 1)
//   param_groups.<g>.params     int64 1-d: the indices of group g's parameters
// The state tensors are the live ones, not copies (as PyTorch's state_dict); load_state_dict
// copies values into the optimizer's own tensors. Loading is strict: a missing or unexpected
// key, or a tensor of another shape or dtype, is a ValueError naming it.

/// What step() may evaluate first: the closure re-computes the loss and its gradients.
using LossClosure = std::function<Tensor()>;

/// The base of every optimizer (libtorch's torch::optim::Optimizer).
class Optimizer {
 public:
  /// An optimizer over `param_groups`; groups without options get `defaults`.
  Optimizer(std::vector<OptimizerParamGroup> param_groups, std::unique_ptr<OptimizerOptions> defaults);
  virtual ~Optimizer() = default;
  Optimizer(const Optimizer&) = delete;
  Optimizer& operator=(const Optimizer&) = delete;

  /// Add a group; it takes the defaults unless it has options; a parameter already optimized is
  /// PyTorch's error.
  void add_param_group(const OptimizerParamGroup& param_group);
  /// One update of every parameter that has a gradient (others are skipped), recorded in the
  /// ledger as one row named by the optimizer; with a closure, returns the loss it computed.
  Tensor step(const LossClosure& closure = nullptr);
  /// Drop every gradient (set_to_none, PyTorch's default since 2.0) or zero it in place.
  void zero_grad(bool set_to_none = true);

  /// The groups, with their options (an LR schedule writes `lr` here).
  std::vector<OptimizerParamGroup>& param_groups() { return param_groups_; }
  const std::vector<OptimizerParamGroup>& param_groups() const { return param_groups_; }
  /// The options a group without its own gets.
  const OptimizerOptions& defaults() const { return *defaults_; }
  /// Every parameter, group after group.
  std::vector<Tensor> parameters() const;
  /// Number of parameters over all groups.
  size_t size() const;
  /// Parameter `p`'s state, or nullptr before its first step.
  const OptimizerParamState* state(const Tensor& p) const;

  /// The optimizer as named tensors (Note [Optimizer state dict]).
  StateDict state_dict() const;
  /// Restore what state_dict() gave, strictly (Note [Optimizer state dict]).
  void load_state_dict(const StateDict& state_dict);

 protected:
  /// The name of this optimizer's ledger row ("adamw_step").
  virtual std::string_view step_name() const = 0;
  /// The state tensors a parameter gets on its first step, by name, with the value each starts
  /// at (each has the parameter's shape and dtype).
  virtual std::vector<std::pair<std::string, double>> state_init(const OptimizerOptions& options) const = 0;
  /// Update parameter `param` from `grad`; `state.step` already counts this step. Returns what
  /// the update cost, for the ledger.
  virtual ops::Cost update(Tensor& param, const Tensor& grad, OptimizerParamState& state,
                           const OptimizerOptions& options) = 0;

 private:
  OptimizerParamState& state_for(const Tensor& param, const OptimizerOptions& options);
  std::vector<OptimizerParamGroup> param_groups_;
  std::unique_ptr<OptimizerOptions> defaults_;
  std::unordered_map<const TensorImpl*, OptimizerParamState> state_;
};

/// The base of an optimizer whose groups carry `Options` (SGDOptions, ...): libtorch's two
/// constructors, and the group options as Options.
template <class Options>
class OptimizerOf : public Optimizer {
 public:
  /// The optimizer over `param_groups`, groups without options taking `defaults`.
  OptimizerOf(std::vector<OptimizerParamGroup> param_groups, Options defaults = Options())
      : Optimizer(std::move(param_groups), std::make_unique<Options>(defaults)) {}
  /// The optimizer over one group of parameters.
  OptimizerOf(std::vector<Tensor> params, Options defaults = Options())
      : OptimizerOf(std::vector<OptimizerParamGroup>{OptimizerParamGroup(std::move(params))}, defaults) {}

 protected:
  /// A group's options as this optimizer's options class.
  static const Options& options_of(const OptimizerOptions& options) {
    const auto* o = dynamic_cast<const Options*>(&options);
    TALLY_INTERNAL_ASSERT(o != nullptr, "param group options of another optimizer");
    return *o;
  }
};

namespace detail {
/// PyTorch's ValueError for a hyper-parameter out of range: "Invalid <what>: <value>".
void check_hyper(bool ok, std::string_view what, double value);
}  // namespace detail

}  // namespace tally::optim
