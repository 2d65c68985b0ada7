#include "tally/ops/apply.h"

namespace tally::ops {

namespace detail {
thread_local OpObserver* tls_observer = nullptr;
thread_local int tls_op_depth = 0;
}  // namespace detail

OpObserver* set_op_observer(OpObserver* observer) {
  OpObserver* previous = detail::tls_observer;
  detail::tls_observer = observer;
  return previous;
}

}  // namespace tally::ops
