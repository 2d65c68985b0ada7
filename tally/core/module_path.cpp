#include "tally/core/module_path.h"

namespace tally {

namespace {
thread_local ModulePath tls_path;
}  // namespace

const ModulePath& current_module_path_handle() { return tls_path; }

const std::string& current_module_path() {
  static const std::string root;
  return tls_path ? *tls_path : root;
}

ModuleScope::ModuleScope(std::string_view name) : active_(!name.empty()) {
  if (!active_) return;
  previous_ = tls_path;
  std::string path = previous_ ? *previous_ + "." : std::string();
  path += name;
  tls_path = std::make_shared<const std::string>(std::move(path));
}

ModuleScope::~ModuleScope() {
  if (active_) tls_path = std::move(previous_);
}

ModulePathOverride::ModulePathOverride(ModulePath path) : previous_(std::move(tls_path)) { tls_path = std::move(path); }
ModulePathOverride::~ModulePathOverride() { tls_path = std::move(previous_); }

}  // namespace tally
