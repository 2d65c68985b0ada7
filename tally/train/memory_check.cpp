#include "tally/train/memory_check.h"

#include <algorithm>
#include <optional>

#include "tally/core/allocator.h"
#include "tally/error/error.h"
#include "tally/train/step_profile.h"

namespace tally::train {

namespace {

// The books' bandwidth probe: three arrays of 64 MiB (measure_roofline in summary.cpp).
constexpr int64_t kBandwidthProbeBytes = 3 * (int64_t{64} << 20);
// Per thread: glibc's malloc arena (64 MiB of address space, touched as used) and a stack.
constexpr int64_t kPerThreadBytes = (int64_t{64} << 20) + (int64_t{8} << 20);
// The heap's own growth, the loader's batches and what the books keep (JSON, the report).
constexpr int64_t kProcessMarginBytes = int64_t{64} << 20;

int64_t category(const StepPrediction& p, MemoryCategory c) { return p.peak[static_cast<size_t>(c)]; }

StepPrediction predict(const TrainConfig& config) { return predict_step(config, {1.0, 1.0}); }

}  // namespace

MemoryNeed predict_memory_need(const TrainConfig& config, int threads) {
  const StepPrediction step = predict(config);
  // After the last step the activations are gone and the state stays, beside the books' work.
  const int64_t state = category(step, MemoryCategory::Parameters) + category(step, MemoryCategory::WorkingCopies) +
                        category(step, MemoryCategory::Gradients) + category(step, MemoryCategory::OptimizerState);
  int64_t books = kBandwidthProbeBytes;
  if (config.precision != "fp32") {  // precision_summary times a step of each on a fresh model
    TrainConfig fp32 = config;
    fp32.precision = "fp32";
    books = std::max({books, step.peak_total, predict(fp32).peak_total});
  }
  MemoryNeed need;
  need.tensor_bytes = std::max(step.peak_total, state + books);
  need.allocator_bytes = need.tensor_bytes / 8;
  need.process_bytes = kProcessMarginBytes + std::max(threads, 1) * kPerThreadBytes;
  return need;
}

void check_memory_fits(const TrainConfig& config, int threads, const std::vector<machine::MemoryBound>& bounds, int processes) {
  if (bounds.empty()) return;
  const auto share = [&](const machine::MemoryBound& b) { return b.per_process ? b.available_bytes : b.available_bytes / std::max(processes, 1); };
  const machine::MemoryBound& tightest =
      *std::min_element(bounds.begin(), bounds.end(), [&](const auto& a, const auto& b) { return share(a) < share(b); });
  const int64_t available = share(tightest);
  const MemoryNeed need = predict_memory_need(config, threads);
  if (need.total() <= available) return;
  auto fits = [&](const TrainConfig& c) { return predict_memory_need(c, threads).total() <= available; };
  // The largest batch that fits: the need grows with the batch, so a bisection finds it.
  std::optional<int64_t> batch;
  for (int64_t lo = 1, hi = config.batch_size - 1; lo <= hi;) {
    const int64_t mid = lo + (hi - lo) / 2;
    TrainConfig c = config;
    c.batch_size = mid;
    if (fits(c)) {
      batch = mid;
      lo = mid + 1;
    } else {
      hi = mid - 1;
    }
  }
  std::string would_fit;
  if (batch) would_fit = ::tally::detail::str_cat("--batch-size ", *batch, " would fit");
  if (config.precision == "fp32") {
    TrainConfig bf16 = config;
    bf16.precision = "bf16";
    if (fits(bf16)) would_fit += ::tally::detail::str_cat(would_fit.empty() ? "" : ", or ", "--precision bf16 would fit");
  }
  if (would_fit.empty()) {
    TrainConfig one = config;
    one.batch_size = 1;
    would_fit = ::tally::detail::str_cat("even --batch-size 1 would need ", describe_bytes(predict_memory_need(one, threads).total()),
                                         ": a smaller model would fit");
  }
  throw OutOfMemoryError(::tally::detail::str_cat(
      "not enough memory for this run: it needs about ", describe_bytes(need.total()), " (tensors at their peak ",
      describe_bytes(need.tensor_bytes), ", the allocator's size classes and the process's threads and heap the rest) but ",
      describe_bytes(available), " is available under ", tightest.source,
      available != tightest.available_bytes ? ::tally::detail::str_cat(" (its share for each of ", processes, " processes on this machine)") : "",
      "; ", would_fit,
      "; --no-memory-check runs it anyway"));
}

}  // namespace tally::train
