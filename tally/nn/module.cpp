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
  if (requires_grad) requires_grad_();
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
  OrderedDict<Tensor> out("buffer");
  visit("", recurse, [&](const std::string& prefix, const Module& m) {
    for (const auto& [key, b] : m.buffers_) out.insert(join(prefix, key), b);
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

void Module::load_state_dict(const StateDict& state, bool strict) {
  const StateDict own = state_dict();
  std::vector<std::string> missing, unexpected;
  for (const auto& [key, t] : own)
    if (!state.contains(key)) missing.push_back(key);
  for (const auto& [key, t] : state)
    if (!own.contains(key)) unexpected.push_back(key);
  auto list = [](const std::vector<std::string>& names) {
    std::string s;
    for (const std::string& n : names) s += (s.empty() ? "\"" : ", \"") + n + "\"";
    return s;
  };
  if (strict && (!missing.empty() || !unexpected.empty())) {
    std::string msg = "Error(s) in loading state_dict for " + type_name_ + ":";
    if (!missing.empty()) msg += " Missing key(s) in state_dict: " + list(missing) + ".";
    if (!unexpected.empty()) msg += " Unexpected key(s) in state_dict: " + list(unexpected) + ".";
    throw ValueError(msg);
  }
  // Check every shape before copying anything, so a failed load leaves the module as it was.
  for (const auto& [key, dst] : own) {
    const Tensor* src = state.find(key);
    TALLY_CHECK(src == nullptr || src->sizes() == dst.sizes(), "Error(s) in loading state_dict for ", type_name_,
                ": size mismatch for ", key, ": copying a param with shape ", src->sizes(),
                " from checkpoint, the shape in current model is ", dst.sizes(), ".");
  }
  NoGradGuard no_grad;
  for (const auto& [key, dst] : own)
    if (const Tensor* src = state.find(key)) Tensor(dst).copy_(*src);
}

void Module::train(bool on) {
  training_ = on;
  for (const auto& [key, child] : children_) child->train(on);
}

void Module::to(Dtype dtype) {
  TALLY_CHECK_TYPE_ERROR(is_floating_point(dtype), "nn.Module.to only accepts floating point or complex dtypes, but got desired dtype=",
                         dtype_name(dtype));
  visit("", true, [&](const std::string&, const Module& m) {
    for (const auto& [key, p] : m.parameters_) {
      if (!p.is_floating_point() || p.dtype() == dtype) continue;
      Tensor converted = p.detach().to(dtype);
      accounting::set_memory_category(converted, MemoryCategory::Parameters);
      Tensor(p).set_data(converted);
      Tensor(p).mutable_grad() = Tensor();
    }
    for (const auto& [key, b] : m.buffers_)
      if (b.defined() && b.is_floating_point() && b.dtype() != dtype) Tensor(b).set_data(b.to(dtype));
  });
}

void Module::zero_grad(bool set_to_none) { zero_grads(parameters(), set_to_none); }

}  // namespace tally::nn
