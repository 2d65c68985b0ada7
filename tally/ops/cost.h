#pragma once
// What one op run costs, and the observer the accounting layer installs to hear of every op.
// Small on purpose: the ledger (accounting/flop_counter) and the layers above ops (nn, optim)
// depend on this header only, not on apply()'s machinery.

#include <cstdint>
#include <string_view>

namespace tally::ops {

/// What one op run cost. Conventions: a (M×K)·(K×N) matmul is 2·M·N·K FLOPs; elementwise math
/// is one FLOP per output element per arithmetic step; views cost nothing; bytes are counted at
/// the tensors' dtypes.
struct Cost {
  int64_t flops = 0;
  int64_t bytes_read = 0;
  int64_t bytes_written = 0;
  /// A collective's traffic on this rank's link (tally/dist): bytes it sent and received, by the
  /// bandwidth-optimal algorithm's count (an all-reduce of S bytes over p ranks: 2·(p−1)/p·S each way).
  int64_t bytes_sent = 0;
  int64_t bytes_received = 0;
  Cost& operator+=(const Cost& o) {
    flops += o.flops; bytes_read += o.bytes_read; bytes_written += o.bytes_written;
    bytes_sent += o.bytes_sent; bytes_received += o.bytes_received;
    return *this;
  }
};

/// Receives every top-level op that runs (installed by accounting::FlopCounter).
class OpObserver {
 public:
  virtual ~OpObserver() = default;
  /// Called after op `name` ran, with its declared cost and measured wall time (0 on the meta
  /// device, where nothing runs).
  virtual void on_op(std::string_view name, const Cost& cost, double seconds) = 0;
};

/// Install (or, with nullptr, remove) the observer for the calling thread; returns the previous one.
OpObserver* set_op_observer(OpObserver* observer);
/// Installs `observer` (nullptr: none, so that what runs in the scope is on no ledger) for the
/// calling thread while it lives, then the one before, however the scope is left.
class OpObserverScope {
 public:
  explicit OpObserverScope(OpObserver* observer) : previous_(set_op_observer(observer)) {}
  ~OpObserverScope() { set_op_observer(previous_); }
  OpObserverScope(const OpObserverScope&) = delete;
  OpObserverScope& operator=(const OpObserverScope&) = delete;

 private:
  OpObserver* previous_;
};

/// Tell the calling thread's observer, if any, of work that ran outside an op: a collective,
/// which tally/dist records when its caller has waited for it.
void record_op(std::string_view name, const Cost& cost, double seconds);

}  // namespace tally::ops
