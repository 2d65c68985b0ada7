#pragma once
// The one path every operator goes through.
//
// An operator is a struct with
//   static constexpr std::string_view name;          // as PyTorch names it
//   static Tensor forward(const Args&...);           // checks, shape/dtype rule, output, kernel call
//   static Cost cost(const Tensor& out, const Args&...);  // its FLOPs and bytes, as a formula
// and apply<Op>(args...) runs it, timing it and reporting (name, cost, seconds) to the observer
// the accounting layer installs. Backward rules (the autograd issue) attach here too, so an op
// stays defined in exactly one place.
//
// Note [Nested ops]
// An op's forward may call other ops (reshape calls contiguous, matmul may copy an operand).
// Those inner calls are part of the outer op: its declared cost covers them, so apply() does not
// report them a second time.

#include <chrono>
#include <cstdint>
#include <string_view>

#include "tally/core/tensor.h"

namespace tally::ops {

/// What one op run cost. Conventions: a (M×K)·(K×N) matmul is 2·M·N·K FLOPs; elementwise math
/// is one FLOP per output element per arithmetic step; views cost nothing; bytes are counted at
/// the tensors' dtypes.
struct Cost {
  int64_t flops = 0;
  int64_t bytes_read = 0;
  int64_t bytes_written = 0;
  Cost& operator+=(const Cost& o) {
    flops += o.flops; bytes_read += o.bytes_read; bytes_written += o.bytes_written;
    return *this;
  }
};

/// Receives every top-level op that runs (installed by accounting::FlopCounter).
class OpObserver {
 public:
  virtual ~OpObserver() = default;
  /// Called after op `name` ran, with its declared cost and measured wall time.
  virtual void on_op(std::string_view name, const Cost& cost, double seconds) = 0;
};

/// Install (or, with nullptr, remove) the observer for the calling thread; returns the previous one.
OpObserver* set_op_observer(OpObserver* observer);

namespace detail {
extern thread_local OpObserver* tls_observer;
extern thread_local int tls_op_depth;

/// Marks that an op is running on this thread (Note [Nested ops]).
struct OpDepthGuard {
  OpDepthGuard() { ++tls_op_depth; }
  ~OpDepthGuard() { --tls_op_depth; }
  OpDepthGuard(const OpDepthGuard&) = delete;
  OpDepthGuard& operator=(const OpDepthGuard&) = delete;
};
}  // namespace detail

/// Run op `Op` on `args`: forward, then report its cost and time to the observer.
template <class Op, class... Args>
auto apply(const Args&... args) {
  const bool observed = detail::tls_observer != nullptr && detail::tls_op_depth == 0;
  detail::OpDepthGuard guard;
  if (!observed) return Op::forward(args...);
  auto start = std::chrono::steady_clock::now();
  auto out = Op::forward(args...);
  std::chrono::duration<double> took = std::chrono::steady_clock::now() - start;
  detail::tls_observer->on_op(Op::name, Op::cost(out, args...), took.count());
  return out;
}

}  // namespace tally::ops
