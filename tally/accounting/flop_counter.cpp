#include "tally/accounting/flop_counter.h"

#include <algorithm>
#include <cstdio>
#include <sstream>

#include "tally/core/autograd_meta.h"
#include "tally/error/error.h"

namespace tally::accounting {

namespace {
thread_local bool tls_in_optimizer = false;
constexpr Phase kPhases[] = {Phase::Forward, Phase::Backward, Phase::Optimizer};
}  // namespace

Phase current_phase() { return tls_in_optimizer ? Phase::Optimizer : autograd::in_backward() ? Phase::Backward : Phase::Forward; }

const char* phase_name(Phase p) {
  switch (p) {
    case Phase::Forward: return "forward";
    case Phase::Backward: return "backward";
    case Phase::Optimizer: return "optimizer";
  }
  return "?";
}

OptimizerPhaseGuard::OptimizerPhaseGuard() : previous_(tls_in_optimizer) { tls_in_optimizer = true; }
OptimizerPhaseGuard::~OptimizerPhaseGuard() { tls_in_optimizer = previous_; }

OpTotals& OpTotals::operator+=(const OpTotals& o) {
  // A count past 2^63 - 1 (a meta-device step of a model far beyond any machine) would wrap into
  // a wrong or negative figure: an error instead.
  int64_t sums[4];
  const bool wrapped = __builtin_add_overflow(calls, o.calls, &sums[0]) || __builtin_add_overflow(flops, o.flops, &sums[1]) ||
                       __builtin_add_overflow(bytes_read, o.bytes_read, &sums[2]) ||
                       __builtin_add_overflow(bytes_written, o.bytes_written, &sums[3]);
  TALLY_CHECK(!wrapped, "the ledger's 64-bit counts overflowed: more than 9.2e18 FLOPs or bytes in one total (", flops, " + ",
              o.flops, " FLOPs)");
  calls = sums[0];
  flops = sums[1];
  bytes_read = sums[2];
  bytes_written = sums[3];
  seconds += o.seconds;
  bytes_sent += o.bytes_sent;  // a rank's traffic: far from 2^63 bytes
  bytes_received += o.bytes_received;
  return *this;
}

FlopCounter::FlopCounter() : previous_(ops::set_op_observer(this)) {}
FlopCounter::~FlopCounter() { stop(); }

void FlopCounter::stop() {
  if (recording_) ops::set_op_observer(previous_);
  recording_ = false;
}

void FlopCounter::on_op(std::string_view name, const ops::Cost& cost, double seconds) {
  const Phase phase = current_phase();
  const OpTotals t{1, cost.flops, cost.bytes_read, cost.bytes_written, seconds, cost.bytes_sent, cost.bytes_received};
  by_op_[{std::string(name), phase}] += t;
  by_module_[{current_module_path(), phase}] += t;
  if (previous_) previous_->on_op(name, cost, seconds);
}

int64_t FlopCounter::total_flops() const {
  int64_t total = 0;
  for (Phase p : kPhases) total += total_flops(p);
  return total;
}
int64_t FlopCounter::total_flops(Phase phase) const { return totals(phase).flops; }

OpTotals FlopCounter::op(const std::string& name, Phase phase) const {
  auto it = by_op_.find({name, phase});
  return it == by_op_.end() ? OpTotals{} : it->second;
}

OpTotals FlopCounter::totals(Phase phase) const {
  OpTotals t;
  for (const auto& [key, v] : by_op_)
    if (key.second == phase) t += v;
  return t;
}

double Roofline::roof(double intensity) const { return std::min(peak_flops_per_sec, intensity * bytes_per_sec); }

std::string FlopCounter::table(const Roofline& roofline) const {
  std::ostringstream os;
  char line[240];
  const bool roof = roofline.peak_flops_per_sec > 0 && roofline.bytes_per_sec > 0;
  std::snprintf(line, sizeof line, "%-16s %-8s %8s %14s %14s %9s %10s %10s%s\n", "op", "phase", "calls", "FLOPs", "bytes",
                "FLOP/B", "ms", "GFLOP/s", roof ? "  bound     of roof" : "");
  os << line;
  bool above_roof = false;
  for (const auto& [key, t] : by_op_) {
    const double flops_per_sec = t.seconds > 0 ? static_cast<double>(t.flops) / t.seconds : 0.0;
    std::snprintf(line, sizeof line, "%-16s %-8s %8lld %14lld %14lld %9.2f %10.3f %10.2f", key.first.c_str(),
                  phase_name(key.second), static_cast<long long>(t.calls), static_cast<long long>(t.flops),
                  static_cast<long long>(t.bytes_read + t.bytes_written), t.arithmetic_intensity(), t.seconds * 1e3,
                  flops_per_sec / 1e9);
    os << line;
    if (roof && t.flops > 0) {
      // Memory-bound ops are judged by bytes moved, compute-bound ones by FLOP/s.
      const double frac = flops_per_sec / roofline.roof(t.arithmetic_intensity());
      above_roof = above_roof || frac > 1.0;
      std::snprintf(line, sizeof line, "  %-8s %6.1f%%", roofline.bound(t.arithmetic_intensity()), 100 * frac);
      os << line;
    }
    os << '\n';
  }
  if (roof) {
    std::snprintf(line, sizeof line, "ridge point %.1f FLOP/B (peak %.1f GFLOP/s, bandwidth %.1f GB/s)\n", roofline.ridge_point(),
                  roofline.peak_flops_per_sec / 1e9, roofline.bytes_per_sec / 1e9);
    os << line;
    // The memory roof is DRAM bandwidth; an op whose tensors fit in cache can run above it.
    if (above_roof) os << "above 100% of roof: that op's data came from cache, which is faster than the memory roof\n";
  }
  for (Phase p : kPhases) {
    const OpTotals t = totals(p);
    if (p == Phase::Optimizer && t.calls == 0) continue;  // a table of a model alone stays as it was
    std::snprintf(line, sizeof line, "%-16s %-8s %8lld %14lld %14lld\n", "total", phase_name(p), static_cast<long long>(t.calls),
                  static_cast<long long>(t.flops), static_cast<long long>(t.bytes_read + t.bytes_written));
    os << line;
  }
  return os.str();
}

}  // namespace tally::accounting
