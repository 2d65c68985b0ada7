#pragma once
// The dotted path of the module whose code is running ("blocks.0.attn"), for the ledger: an op is
// attributed to the module that ran it in the forward pass, and — because each autograd node
// remembers the path it was made under — its backward is attributed to the same module.
// nn::Module opens a ModuleScope around its forward; the engine restores a node's path while the
// node runs. The path is per thread.

#include <memory>
#include <string>
#include <string_view>

namespace tally {

/// A module path shared by every node made under it (null is the root, "").
using ModulePath = std::shared_ptr<const std::string>;

/// The path of the ModuleScopes open on this thread; null outside any.
const ModulePath& current_module_path_handle();
/// The same as a string ("" outside any scope).
const std::string& current_module_path();

/// Appends `name` to this thread's module path while alive; an empty name changes nothing (a
/// root module has no name of its own).
class ModuleScope {
 public:
  explicit ModuleScope(std::string_view name);
  ~ModuleScope();
  ModuleScope(const ModuleScope&) = delete;
  ModuleScope& operator=(const ModuleScope&) = delete;

 private:
  ModulePath previous_;
  bool active_;
};

/// Sets this thread's module path to `path` while alive (the engine, running a node's backward).
class ModulePathOverride {
 public:
  explicit ModulePathOverride(ModulePath path);
  ~ModulePathOverride();
  ModulePathOverride(const ModulePathOverride&) = delete;
  ModulePathOverride& operator=(const ModulePathOverride&) = delete;

 private:
  ModulePath previous_;
};

}  // namespace tally
