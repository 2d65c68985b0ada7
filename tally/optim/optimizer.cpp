#include "tally/optim/optimizer.h"

#include <algorithm>
#include <sstream>
#include <unordered_set>

#include "tally/accounting/flop_counter.h"
#include "tally/accounting/memory_tracker.h"
#include "tally/core/autograd_meta.h"
#include "tally/ops/apply.h"
#include "tally/ops/creation.h"
#include "tally/ops/foreach.h"
#include "tally/optim/fused.h"

namespace tally::optim {

namespace {

double* hyper_number(OptimizerOptions& options, std::string_view name) {
  for (auto& [n, ref] : options.hypers())
    if (n == name) return std::get<double*>(ref);
  TALLY_INTERNAL_ASSERT(false, "options without '", name, "'");
  return nullptr;
}

/// The tensor `key` of a state dict being loaded, checked against the shape and dtype expected.
const Tensor& expect_entry(const StateDict& dict, const std::string& key, IntArrayRef sizes, Dtype dtype) {
  const Tensor* t = dict.find(key);
  TALLY_CHECK(t != nullptr, "load_state_dict: missing key '", key, "' (expected shape ", sizes, ")");
  TALLY_CHECK(t->sizes() == sizes, "load_state_dict: '", key, "' has shape ", t->sizes(), " but the optimizer expects ",
              sizes);
  TALLY_CHECK(t->dtype() == dtype, "load_state_dict: '", key, "' has dtype ", dtype_name(t->dtype()), " but the optimizer expects ",
              dtype_name(dtype));
  return *t;
}

}  // namespace

double OptimizerOptions::get_lr() const { return *hyper_number(const_cast<OptimizerOptions&>(*this), "lr"); }
void OptimizerOptions::set_lr(double lr) { *hyper_number(*this, "lr") = lr; }

OptimizerParamGroup::OptimizerParamGroup(std::vector<Tensor> params) : params_(std::move(params)) {}
OptimizerParamGroup::OptimizerParamGroup(std::vector<Tensor> params, std::unique_ptr<OptimizerOptions> options)
    : params_(std::move(params)), options_(std::move(options)) {}
OptimizerParamGroup::OptimizerParamGroup(const OptimizerParamGroup& other)
    : params_(other.params_), options_(other.options_ ? other.options_->clone() : nullptr), initial_lr_(other.initial_lr_) {}
OptimizerParamGroup& OptimizerParamGroup::operator=(const OptimizerParamGroup& other) {
  if (this != &other) *this = OptimizerParamGroup(other);
  return *this;
}
OptimizerOptions& OptimizerParamGroup::options() {
  TALLY_CHECK(options_ != nullptr, "this param group has no options");
  return *options_;
}
const OptimizerOptions& OptimizerParamGroup::options() const { return const_cast<OptimizerParamGroup&>(*this).options(); }

Optimizer::Optimizer(std::vector<OptimizerParamGroup> param_groups, std::unique_ptr<OptimizerOptions> defaults)
    : defaults_(std::move(defaults)) {
  defaults_->validate();
  size_t total = 0;
  for (const OptimizerParamGroup& g : param_groups) total += g.params().size();
  TALLY_CHECK(total > 0, "optimizer got an empty parameter list");
  for (const OptimizerParamGroup& g : param_groups) add_param_group(g);
}

void Optimizer::add_param_group(const OptimizerParamGroup& param_group) {
  OptimizerParamGroup group(param_group.params(), param_group.has_options() ? param_group.options().clone() : defaults_->clone());
  group.options().validate();
  std::unordered_set<const TensorImpl*> seen, in_group;
  for (const Tensor& p : parameters()) seen.insert(&p.impl());
  for (const Tensor& p : group.params()) {
    TALLY_CHECK(p.defined(), "optimizer can only optimize Tensors, but one of the params is undefined");
    TALLY_CHECK(p.is_leaf(), "can't optimize a non-leaf Tensor");
    // torch 1.13 warns that this "will cause an error" and then steps the parameter twice.
    TALLY_CHECK(in_group.insert(&p.impl()).second, "optimizer contains a parameter group with duplicate parameters (a tensor of shape ",
                p.sizes(), " is listed twice)");
    TALLY_CHECK(seen.insert(&p.impl()).second, "some parameters appear in more than one parameter group");
  }
  param_groups_.push_back(std::move(group));
}

std::vector<Tensor> Optimizer::parameters() const {
  std::vector<Tensor> out;
  for (const OptimizerParamGroup& g : param_groups_) out.insert(out.end(), g.params().begin(), g.params().end());
  return out;
}

size_t Optimizer::size() const {
  size_t n = 0;
  for (const OptimizerParamGroup& g : param_groups_) n += g.params().size();
  return n;
}

const OptimizerParamState* Optimizer::state(const Tensor& p) const {
  auto it = state_.find(&p.impl());
  return it == state_.end() ? nullptr : &it->second;
}

OptimizerParamState& Optimizer::state_for(const Tensor& param, const OptimizerOptions& options) {
  OptimizerParamState& state = state_[&param.impl()];
  const Dtype dtype = detail::state_dtype(param.dtype());
  state.created.clear();
  // What the options ask for: all of it on the first step; later, what an option turned on since
  // asks for (momentum set on an SGD group after it stepped without). What an option turned off
  // since no longer asks for is dropped, so that the memory tracker, state_dict() and
  // load_state_dict() all see the state the step uses (torch keeps it, unread, and would resume
  // with it were the option turned on again; here the state starts afresh then).
  const std::vector<std::pair<std::string, double>> wanted = state_init(options);
  auto is_wanted = [&](const auto& item) {
    return std::any_of(wanted.begin(), wanted.end(), [&](const auto& w) { return w.first == item.first; });
  };
  // Rebuilt only on the step after an option was turned off, not on every step.
  if (!std::all_of(state.tensors.begin(), state.tensors.end(), is_wanted)) {
    StateDict kept("optimizer state");
    for (const auto& item : state.tensors)
      if (is_wanted(item)) kept.insert(item.first, item.second);
    state.tensors = std::move(kept);
  }
  for (const auto& [name, value] : wanted) {
    if (state.tensors.contains(name)) continue;
    // Contiguous whatever the parameter's strides: the fused update walks it as an array.
    Tensor t = full(param.sizes(), value, TensorOptions(dtype).device(param.device()));
    accounting::set_memory_category(t, MemoryCategory::OptimizerState);
    state.tensors.insert(name, std::move(t));
    state.created.push_back(name);
  }
  // The update reads the state as the parameter's arrays: a parameter whose dtype, shape or device
  // changed since (module.to(kFloat64) after a step) would have it read out of bounds.
  for (const auto& [name, t] : state.tensors.items()) {
    TALLY_CHECK(t.dtype() == dtype && t.sizes() == param.sizes() && t.device() == param.device(), "optimizer state '", name,
                "' is ", dtype_name(t.dtype()), " ", t.sizes(), " on ", t.device().str(), ", but its parameter is now ",
                dtype_name(param.dtype()), " ", param.sizes(), " on ", param.device().str(),
                ": the parameter changed after the optimizer stepped (module.to()?); make the optimizer after moving the module");
  }
  return state;
}

Tensor Optimizer::step(const LossClosure& closure) {
  Tensor loss;
  if (closure) loss = closure();
  NoGradGuard no_grad;
  accounting::OptimizerPhaseGuard phase;
  // The whole step is one ledger row; the ops an update runs are nested in it (on the meta
  // device it records its cost and no time).
  Device device(kCPU);
  for (const OptimizerParamGroup& group : param_groups_)
    if (!group.params().empty()) {
      device = group.params().front().device();
      break;
    }
  ops::detail::OpScope row(device);
  ops::Cost cost;
  uint64_t index = 0;  // the parameter's place in the optimizer: part of its rounding key
  for (OptimizerParamGroup& group : param_groups_) {
    for (Tensor& p : group.params()) {
      ++index;
      if (!p.grad().defined()) continue;  // as PyTorch: a parameter without a gradient keeps its state
      OptimizerParamState& state = state_for(p, group.options());
      ++state.step;
      state.rounding_key = detail::rounding_key(index, state.step);
      cost += update(p, p.grad(), state, group.options());
      // Writes inside the step are nested ops, which leave versions alone: count the step's one.
      if (p.storage()) p.storage()->bump_version();
    }
  }
  row.report(step_name(), cost);
  return loss;
}

void Optimizer::zero_grad(bool set_to_none) {
  accounting::OptimizerPhaseGuard phase;
  zero_grads(parameters(), set_to_none);
}

StateDict Optimizer::state_dict() const {
  StateDict out("optimizer state dict key");
  int64_t index = 0;
  for (const OptimizerParamGroup& group : param_groups_) {
    for (const Tensor& p : group.params()) {
      if (const OptimizerParamState* s = state(p)) {
        const std::string prefix = "state." + std::to_string(index) + ".";
        out.insert(prefix + "step", scalar_tensor(s->step, TensorOptions(kInt64)));
        for (const auto& [name, t] : s->tensors) out.insert(prefix + name, t);
      }
      ++index;
    }
  }
  index = 0;
  for (size_t g = 0; g < param_groups_.size(); ++g) {
    const std::string prefix = "param_groups." + std::to_string(g) + ".";
    OptimizerOptions& options = const_cast<OptimizerOptions&>(param_groups_[g].options());
    for (auto& [name, ref] : options.hypers()) {
      const double v = std::visit([](auto* r) { return static_cast<double>(*r); }, ref);
      out.insert(prefix + name, scalar_tensor(v, TensorOptions(kFloat64)));
    }
    const int64_t n = static_cast<int64_t>(param_groups_[g].params().size());
    out.insert(prefix + "params", arange(index, index + n, 1, TensorOptions(kInt64)));
    index += n;
  }
  return out;
}

void Optimizer::load_state_dict(const StateDict& state_dict) {
  // Check everything before changing anything: a refused dict leaves the optimizer as it was.
  std::unordered_set<std::string> expected;
  auto take = [&](const std::string& key, IntArrayRef sizes, Dtype dtype) -> const Tensor& {
    expected.insert(key);
    return expect_entry(state_dict, key, sizes, dtype);
  };
  std::vector<std::unique_ptr<OptimizerOptions>> options;
  int64_t index = 0;
  for (size_t g = 0; g < param_groups_.size(); ++g) {
    const std::string prefix = "param_groups." + std::to_string(g) + ".";
    std::unique_ptr<OptimizerOptions> o = param_groups_[g].options().clone();
    for (auto& [name, ref] : o->hypers()) {
      const double v = take(prefix + name, {}, kFloat64).item<double>();
      std::visit([v](auto* r) { *r = static_cast<std::remove_pointer_t<decltype(r)>>(v); }, ref);
    }
    o->validate();
    const int64_t n = static_cast<int64_t>(param_groups_[g].params().size());
    const Tensor& ids = take(prefix + "params", {n}, kInt64);
    TALLY_CHECK(ids.equal(arange(index, index + n, 1, TensorOptions(kInt64))), "load_state_dict: '", prefix,
                "params' lists parameters ", ids, " but this optimizer's group ", g, " holds parameters ", index, "..",
                index + n - 1);
    index += n;
    options.push_back(std::move(o));
  }
  struct Loaded {
    const Tensor* param;
    size_t group;
    int64_t step;
    std::vector<std::pair<std::string, const Tensor*>> tensors;
  };
  std::vector<Loaded> loaded;
  index = 0;
  for (size_t g = 0; g < param_groups_.size(); ++g) {
    for (const Tensor& p : param_groups_[g].params()) {
      const std::string prefix = "state." + std::to_string(index++) + ".";
      if (!state_dict.contains(prefix + "step")) continue;  // a parameter that never stepped
      Loaded l{&p, g, take(prefix + "step", {}, kInt64).item<int64_t>(), {}};
      for (const auto& [name, value] : state_init(*options[g]))
        l.tensors.emplace_back(name, &take(prefix + name, p.sizes(), detail::state_dtype(p.dtype())));
      loaded.push_back(std::move(l));
    }
  }
  for (const auto& [key, value] : state_dict)
    TALLY_CHECK(expected.contains(key), "load_state_dict: unexpected key '", key, "' (shape ", value.sizes(), ")");

  for (size_t g = 0; g < param_groups_.size(); ++g) param_groups_[g].set_options(std::move(options[g]));
  state_.clear();
  NoGradGuard no_grad;
  for (const Loaded& l : loaded) {
    OptimizerParamState& s = state_for(*l.param, param_groups_[l.group].options());
    s.step = l.step;
    for (const auto& [name, t] : l.tensors) s.tensors.at(name).copy_(*t);
  }
}

namespace detail {

void check_hyper(bool ok, std::string_view what, double value) { TALLY_CHECK(ok, "Invalid ", what, ": ", value); }

void check_fusable(std::string_view op, const Tensor& param, const Tensor& grad, bool has_cuda_kernel) {
  TALLY_CHECK_TYPE_ERROR(param.dtype() == kFloat32 || param.dtype() == kFloat64 || param.dtype() == kBFloat16, op,
                         ": the fused update takes float32, float64 and bfloat16 parameters, got ", dtype_name(param.dtype()));
  TALLY_CHECK_TYPE_ERROR(grad.dtype() == param.dtype(), op, ": the gradient's dtype ", dtype_name(grad.dtype()),
                         " differs from the parameter's ", dtype_name(param.dtype()));
  TALLY_CHECK(grad.sizes() == param.sizes(), op, ": gradient of shape ", grad.sizes(), " for a parameter of shape ",
              param.sizes());
  TALLY_CHECK_TYPE(DeviceError, grad.device() == param.device(), op, ": the parameter is on ", param.device().str(),
                   " but its gradient on ", grad.device().str());
  if (param.device().is_cuda()) {
    TALLY_CHECK_TYPE(NotImplementedError, has_cuda_kernel, op, ": no CUDA kernel for this optimizer's fused update");
    TALLY_CHECK_TYPE(NotImplementedError, param.dtype() != kBFloat16, op,
                     ": bfloat16 parameters (updated with stochastic rounding) have no CUDA update yet; keep float32 master weights");
  }
}

void finish_update(const Tensor& param, const Tensor& updated) {
  if (!updated.is_same(param)) const_cast<Tensor&>(param).copy_(updated);  // nested in the step: not a row of its own
}

}  // namespace detail

}  // namespace tally::optim
