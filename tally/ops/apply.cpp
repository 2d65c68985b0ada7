#include "tally/ops/apply.h"

#include <cctype>
#include <mutex>
#include <set>

namespace tally::ops {

namespace detail {
thread_local OpObserver* tls_observer = nullptr;
thread_local int tls_op_depth = 0;
}  // namespace detail

std::string detail::backward_node_name(std::string_view op) {
  std::string n;
  bool upper = true;
  for (char c : op) {
    if (c == '_') { upper = true; continue; }
    n += upper ? static_cast<char>(std::toupper(static_cast<unsigned char>(c))) : c;
    upper = false;
  }
  return n + "Backward0";
}

namespace {
std::mutex& registry_mutex() {
  static std::mutex m;
  return m;
}
std::set<std::string>& registry() {
  static std::set<std::string> names;
  return names;
}
}  // namespace

void detail::register_differentiable(std::string_view name) {
  std::lock_guard lock(registry_mutex());
  registry().emplace(name);
}

std::vector<std::string> differentiable_ops() {
  std::lock_guard lock(registry_mutex());
  return {registry().begin(), registry().end()};
}

OpObserver* set_op_observer(OpObserver* observer) {
  OpObserver* previous = detail::tls_observer;
  detail::tls_observer = observer;
  return previous;
}

}  // namespace tally::ops
