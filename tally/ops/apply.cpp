#include "tally/ops/apply.h"

#include <cctype>

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

OpObserver* set_op_observer(OpObserver* observer) {
  OpObserver* previous = detail::tls_observer;
  detail::tls_observer = observer;
  return previous;
}

}  // namespace tally::ops
