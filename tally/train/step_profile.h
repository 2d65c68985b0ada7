#pragma once
// The books of one training step, measured and predicted: what `tally train` puts in
// summary.json (docs/run_dir.md) next to its loss curve.
//   - StepProfile watches a real step: the ledger by op and by module, the memory tracker's peak
//     by category, and the live bytes by category after every op (the step's memory timeline).
//   - predict_step runs the same step on the meta device: the ledger's FLOPs and the tracker's
//     peak with no byte allocated, and a step time from the measured roofs.

#include <array>
#include <cstdint>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "tally/accounting/flop_counter.h"
#include "tally/accounting/memory_tracker.h"
#include "tally/core/allocator.h"
#include "tally/train/config.h"

namespace tally::train {

/// Bytes per memory category, in MemoryCategory's order.
using CategoryBytes = std::array<int64_t, kNumMemoryCategories>;
/// {"parameters": ..., "gradients": ..., ...}.
nlohmann::json category_json(const CategoryBytes& bytes);

/// Watches the ops run while it lives (it chains to the observers already installed).
class StepProfile : public ops::OpObserver {
 public:
  StepProfile();
  ~StepProfile() override;
  StepProfile(const StepProfile&) = delete;
  StepProfile& operator=(const StepProfile&) = delete;

  void on_op(std::string_view name, const ops::Cost& cost, double seconds) override;
  /// Stop watching (the figures stay, for the accessors below); the destructor does it otherwise.
  void finish();

  /// The ledger of the step.
  const accounting::FlopCounter& ledger() const { return counter_; }
  /// The tracker's peak by category over the step (live bytes from before it included).
  CategoryBytes peak() const;
  int64_t peak_total() const { return watching_ ? tracker_.peak_allocated_bytes() : peak_total_; }
  /// The allocator's peak over the step: live tensors and the blocks it keeps for reuse.
  int64_t peak_reserved() const { return watching_ ? tracker_.peak_reserved_bytes() : peak_reserved_; }
  /// summary.json's "ops" (each op and phase, its roofline verdict), "modules", "memory_timeline"
  /// and "time_split".
  nlohmann::json ops_json(const accounting::Roofline& roofline) const;
  nlohmann::json modules_json() const;
  nlohmann::json timeline_json() const { return timeline_; }
  /// summary.json's "memory.other": the "other" category at its highest between the step's ops,
  /// split exactly into what was held before the step and what each phase's ops added up to that
  /// moment (Note [What holds "other"]).
  nlohmann::json other_json() const;
  nlohmann::json time_split_json(const accounting::Roofline& roofline) const;

 private:
  accounting::MemoryTracker tracker_;
  accounting::FlopCounter counter_;
  ops::OpObserver* previous_ = nullptr;
  int64_t other_at_start_ = 0;  ///< live bytes of "other" when the step began
  bool watching_ = true;
  CategoryBytes peak_{};
  int64_t peak_total_ = 0;
  int64_t peak_reserved_ = 0;
  nlohmann::json timeline_ = nlohmann::json::array();
};

/// One step of `config` run on the meta device: forward, backward and the AdamW update.
struct StepPrediction {
  int64_t forward_flops = 0, backward_flops = 0, optimizer_flops = 0;
  CategoryBytes peak{};
  int64_t peak_total = 0;
  /// Σ over ops of max(FLOPs / peak, bytes / bandwidth): the step's time if each op ran at its roof.
  double step_seconds = 0;
};
StepPrediction predict_step(const TrainConfig& config, const accounting::Roofline& roofline);

/// A step's time two ways: the sum of its ops' times on the ledger, and the wall clock.
struct StepTime {
  double ledger_s = 0;
  double wall_s = 0;
};
/// The median of `v` (not empty).
double median(std::vector<double> v);
/// The ledger's seconds of an op record (Σ over its ops).
double ledger_seconds(const accounting::FlopCounter& ledger);
/// Real steps of `config` on one batch (x, y) with a fresh model: the medians of `steps` steps
/// after a warm-up one. What a mixed-precision run's summary sets its own step against.
StepTime measure_step(const TrainConfig& config, const Tensor& x, const Tensor& y, int steps = 3);

}  // namespace tally::train
