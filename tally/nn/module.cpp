#include "tally/nn/module.h"

#include <algorithm>
#include <functional>
#include <unordered_set>

#include "tally/accounting/memory_tracker.h"
#include "tally/core/autograd_meta.h"
#include "tally/ops/foreach.h"

namespace tally::nn {

Parameter::Parameter(Tensor data, bool requires_grad) : Tensor(std::move(data)) {
  TALLY_CHECK(defined(), "Parameter: the tensor is undefined");
  TALLY_CHECK(is_leaf(), "Parameter: a parameter must be a leaf tensor (detach() it first)");
  accounting::set_memory_category(*this, MemoryCategory::Parameters);
  requires_grad_(requires_grad);  // off too: Parameter(t, false) of a t that requires grad does not, as torch's
}

Module::Module(std::string type_name) : type_name_(std::move(type_name)) {}

void Module::check_new_name(const std::string& name) const {
  TALLY_CHECK(!name.empty(), type_name_, ": a registered name must not be empty");
  TALLY_CHECK(name.find('.') == std::string::npos, type_name_, ": registered name '", name, "' must not contain '.'");
  TALLY_CHECK(!parameters_.contains(name) && !buffers_.contains(name) && !children_.contains(name), type_name_,
              ": attribute '", name, "' is already registered");
}

Tensor& Module::register_parameter(std::string name, Tensor tensor, bool requires_grad) {
  check_new_name(name);
  return parameters_.insert(std::move(name), Parameter(std::move(tensor), requires_grad));
}

Tensor& Module::register_buffer(std::string name, Tensor tensor, bool persistent) {
  check_new_name(name);
  if (!persistent) non_persistent_.push_back(name);
  return buffers_.insert(std::move(name), std::move(tensor));
}

void Module::adopt(std::string name, std::shared_ptr<Module> module) {
  TALLY_CHECK(module != nullptr, type_name_, ": submodule '", name, "' is null");
  check_new_name(name);
  // A cycle would make every walk over the modules endless (torch's state_dict recurses forever).
  for (const auto& [path, below] : module->named_modules())
    TALLY_CHECK(below != this, type_name_, ": submodule '", name, "' (", module->type_name_,
                ") contains this module; registering it would make a cycle");
  module->name_ = transparent_ && !name_.empty() ? name_ + "." + name : name;
  if (module->transparent_) {
    for (const auto& [key, child] : module->children_) child->name_ = module->name_ + "." + key;
  }
  children_.insert(std::move(name), std::move(module));
}

template <class F>
void Module::visit(const std::string& prefix, bool recurse, F&& f) const {
  f(prefix, *this);
  if (!recurse) return;
  for (const auto& [key, child] : children_) child->visit(prefix.empty() ? key : prefix + "." + key, true, f);
}

namespace {
std::string join(const std::string& prefix, const std::string& name) { return prefix.empty() ? name : prefix + "." + name; }
}  // namespace

OrderedDict<Tensor> Module::named_parameters(bool recurse) const {
  OrderedDict<Tensor> out("parameter");
  std::unordered_set<const TensorImpl*> seen;
  visit("", recurse, [&](const std::string& prefix, const Module& m) {
    for (const auto& [key, p] : m.parameters_)
      if (seen.insert(&p.impl()).second) out.insert(join(prefix, key), p);
  });
  return out;
}

std::vector<Tensor> Module::parameters(bool recurse) const { return named_parameters(recurse).values(); }

OrderedDict<Tensor> Module::named_buffers(bool recurse) const {
  // Each tensor once, as named_parameters; an undefined buffer (torch's None) is not listed.
  OrderedDict<Tensor> out("buffer");
  std::unordered_set<const TensorImpl*> seen;
  visit("", recurse, [&](const std::string& prefix, const Module& m) {
    for (const auto& [key, b] : m.buffers_)
      if (b.defined() && seen.insert(&b.impl()).second) out.insert(join(prefix, key), b);
  });
  return out;
}

std::vector<Tensor> Module::buffers(bool recurse) const { return named_buffers(recurse).values(); }

// A module registered twice (one Linear in two places of a Sequential) is listed once, under its
// first name, as torch's children() and named_modules() list it; its parameters are listed once
// too (named_parameters), while state_dict() keeps a key for each place, as torch's does.

std::vector<std::shared_ptr<Module>> Module::children() const { return named_children().values(); }

OrderedDict<std::shared_ptr<Module>> Module::named_children() const {
  OrderedDict<std::shared_ptr<Module>> out("submodule");
  std::unordered_set<const Module*> seen;
  for (const auto& [key, child] : children_)
    if (seen.insert(child.get()).second) out.insert(key, child);
  return out;
}

OrderedDict<Module*> Module::named_modules(const std::string& prefix) {
  OrderedDict<Module*> out("module");
  std::unordered_set<const Module*> seen;
  const std::function<void(const std::string&, Module&)> walk = [&](const std::string& name, Module& m) {
    if (!seen.insert(&m).second) return;
    out.insert(name, &m);
    for (const auto& [key, child] : m.children_) walk(join(name, key), *child);
  };
  walk(prefix, *this);
  return out;
}

int64_t Module::num_parameters() const {
  int64_t n = 0;
  for (const Tensor& p : parameters()) n += p.numel();
  return n;
}

StateDict Module::state_dict() const {
  StateDict out("state_dict entry");
  visit("", true, [&](const std::string& prefix, const Module& m) {
    for (const auto& [key, p] : m.parameters_) out.insert(join(prefix, key), p.detach());
    for (const auto& [key, b] : m.buffers_) {
      const bool persistent = std::find(m.non_persistent_.begin(), m.non_persistent_.end(), key) == m.non_persistent_.end();
      if (persistent && b.defined()) out.insert(join(prefix, key), b.detach());
    }
  });
  return out;
}

Module::IncompatibleKeys Module::load_state_dict(const StateDict& state, bool strict) {
  const StateDict own = state_dict();
  IncompatibleKeys keys;
  for (const auto& [key, t] : own)
    if (!state.contains(key)) keys.missing_keys.push_back(key);
  for (const auto& [key, t] : state)
    if (!own.contains(key)) keys.unexpected_keys.push_back(key);
  auto list = [](const std::vector<std::string>& names) {
    std::string s;
    for (const std::string& n : names) s += (s.empty() ? "\"" : ", \"") + n + "\"";
    return s;
  };
  // Every problem in one message, as torch's; nothing is copied unless there is none, so a
  // refused load leaves the module as it was.
  std::string problems;
  if (strict && !keys.missing_keys.empty()) problems += " Missing key(s) in state_dict: " + list(keys.missing_keys) + ".";
  if (strict && !keys.unexpected_keys.empty()) problems += " Unexpected key(s) in state_dict: " + list(keys.unexpected_keys) + ".";
  for (const auto& [key, dst] : own) {
    const Tensor* src = state.find(key);
    if (src != nullptr && src->sizes() != dst.sizes())
      problems += detail::str_cat(" size mismatch for ", key, ": copying a param with shape ", src->sizes(),
                                  " from checkpoint, the shape in current model is ", dst.sizes(), ".");
  }
  if (!problems.empty()) throw ValueError("Error(s) in loading state_dict for " + type_name_ + ":" + problems);
  NoGradGuard no_grad;
  for (const auto& [key, dst] : own)
    if (const Tensor* src = state.find(key)) Tensor(dst).copy_(*src);
  return keys;
}

void Module::train(bool on) {
  training_ = on;
  for (const auto& [key, child] : children_) child->train(on);
}

void Module::to(Dtype dtype, bool non_blocking) { convert(std::nullopt, dtype, non_blocking); }

void Module::to(Device device, bool non_blocking) { convert(device, std::nullopt, non_blocking); }

void Module::to(Device device, Dtype dtype, bool non_blocking) { convert(device, dtype, non_blocking); }

void Module::convert(std::optional<Device> device, std::optional<Dtype> dtype, bool non_blocking) {
  TALLY_CHECK_TYPE_ERROR(!dtype || is_floating_point(*dtype),
                         "nn.Module.to only accepts floating point or complex dtypes, but got desired dtype=", dtype_name(*dtype));
  // A tensor on the target device, and for a floating tensor in the target dtype; undefined
  // where it is there already.
  auto moved = [&](const Tensor& t) {
    const Device d = device.value_or(t.device());
    const Dtype dt = dtype && t.is_floating_point() ? *dtype : t.dtype();
    return d == t.device() && dt == t.dtype() ? Tensor() : t.detach().to(d, dt, non_blocking);
  };
  visit("", true, [&](const std::string&, const Module& m) {
    for (const auto& [key, p] : m.parameters_) {
      Tensor converted = p.defined() ? moved(p) : Tensor();
      if (!converted.defined()) continue;
      accounting::set_memory_category(converted, MemoryCategory::Parameters);
      Tensor(p).set_data(converted);
      Tensor(p).mutable_grad() = Tensor();
    }
    for (const auto& [key, b] : m.buffers_)
      if (Tensor converted = b.defined() ? moved(b) : Tensor(); converted.defined()) Tensor(b).set_data(converted);
  });
}

void Module::zero_grad(bool set_to_none) { zero_grads(parameters(), set_to_none); }

unsigned Module::register_forward_pre_hook(ForwardPreHook hook) {
  TALLY_CHECK(hook, "register_forward_pre_hook: the hook is empty");
  pre_hooks_.emplace_back(next_hook_, std::move(hook));
  return next_hook_++;
}

unsigned Module::register_forward_hook(ForwardHook hook) {
  TALLY_CHECK(hook, "register_forward_hook: the hook is empty");
  post_hooks_.emplace_back(next_hook_, std::move(hook));
  return next_hook_++;
}

void Module::remove_forward_hook(unsigned handle) {
  auto held = [&](const auto& h) { return h.first == handle; };
  const size_t removed = std::erase_if(pre_hooks_, held) + std::erase_if(post_hooks_, held);
  TALLY_CHECK(removed > 0, "remove_forward_hook: ", type_name_, " holds no forward hook with handle ", handle);
}

}  // namespace tally::nn
