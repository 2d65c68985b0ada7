#pragma once
// The FLOP ledger: a scope object that records every top-level op's declared cost (FLOPs,
// bytes read + written) and measured time, split by op, by phase (forward / backward) and by
// module path. Unlike PyTorch's FlopCounterMode it counts elementwise and reduction work and
// bytes too. The numbers come from each op's one cost formula (tally/ops), never a second copy.

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "tally/core/module_path.h"
#include "tally/ops/cost.h"

namespace tally::accounting {

/// Whether an op ran in the forward pass, inside backward(), or in an optimizer's step.
enum class Phase { Forward, Backward, Optimizer };
/// "forward", "backward" or "optimizer".
const char* phase_name(Phase p);
/// The phase an op run now on this thread is filed under.
Phase current_phase();

/// Marks an optimizer's work on this thread for its lifetime: the ledger files it under
/// Phase::Optimizer, apart from the model's forward and backward FLOPs.
class OptimizerPhaseGuard {
 public:
  OptimizerPhaseGuard();
  ~OptimizerPhaseGuard();
  OptimizerPhaseGuard(const OptimizerPhaseGuard&) = delete;
  OptimizerPhaseGuard& operator=(const OptimizerPhaseGuard&) = delete;

 private:
  bool previous_;
};

/// Totals of one group of op calls.
struct OpTotals {
  int64_t calls = 0;
  int64_t flops = 0;
  int64_t bytes_read = 0;
  int64_t bytes_written = 0;
  double seconds = 0;
  int64_t bytes_sent = 0;      ///< collectives: this rank's traffic (ops::Cost)
  int64_t bytes_received = 0;
  /// FLOPs per byte moved (the roofline's x axis).
  double arithmetic_intensity() const {
    const int64_t b = bytes_read + bytes_written;
    return b ? static_cast<double>(flops) / static_cast<double>(b) : 0.0;
  }
  OpTotals& operator+=(const OpTotals& o);
};

/// The two roofs of a machine: compute peak and memory bandwidth. Their ratio, the ridge point,
/// splits ops into compute-bound (intensity above it) and memory-bound (below).
struct Roofline {
  double peak_flops_per_sec = 0;
  double bytes_per_sec = 0;
  /// FLOPs per byte where the two roofs meet.
  double ridge_point() const { return bytes_per_sec > 0 ? peak_flops_per_sec / bytes_per_sec : 0; }
  /// The attainable FLOP/s at `intensity`: min(peak, intensity × bandwidth).
  double roof(double intensity) const;
  /// "compute" or "memory".
  const char* bound(double intensity) const { return intensity >= ridge_point() ? "compute" : "memory"; }
};

/// Records ops run on this thread while alive; nested counters all see every op.
class FlopCounter : public ops::OpObserver {
 public:
  FlopCounter();
  ~FlopCounter() override;
  FlopCounter(const FlopCounter&) = delete;
  FlopCounter& operator=(const FlopCounter&) = delete;

  /// All FLOPs recorded.
  int64_t total_flops() const;
  /// FLOPs recorded in one phase.
  int64_t total_flops(Phase phase) const;
  /// Totals for op `name` in `phase` (zeros if it never ran).
  OpTotals op(const std::string& name, Phase phase) const;
  /// Totals per (op, phase).
  const std::map<std::pair<std::string, Phase>, OpTotals>& by_op() const { return by_op_; }
  /// Totals per (module path, phase); ops outside any ModuleScope are under "".
  const std::map<std::pair<std::string, Phase>, OpTotals>& by_module() const { return by_module_; }
  /// All totals of one phase.
  OpTotals totals(Phase phase) const;
  /// A table: op, phase, calls, FLOPs, bytes, intensity, time, FLOP/s; with a roofline, also
  /// each op's bound (compute or memory) and the fraction of its roof it reached.
  std::string table(const Roofline& roofline = {}) const;

  void on_op(std::string_view name, const ops::Cost& cost, double seconds) override;

  /// Stop recording, keeping the totals: put back the observer installed before this one. Only
  /// while this counter is the innermost observer of its thread (as it is after its scope's ops).
  void stop();

 private:
  ops::OpObserver* previous_;
  bool recording_ = true;
  std::map<std::pair<std::string, Phase>, OpTotals> by_op_;
  std::map<std::pair<std::string, Phase>, OpTotals> by_module_;
};

/// Module paths for the ledger ("block.0.attn"): nn::Module opens one around its forward, and
/// backward ops are attributed to the module whose forward made their node (core/module_path.h).
using ::tally::ModuleScope;
using ::tally::current_module_path;

}  // namespace tally::accounting
