// The memory pre-check (Note [Memory pre-check] in tally/train/memory_check.h) against bounds a
// test sets: a run that fits passes, one that does not is refused with both figures, its bound
// and the largest batch that fits; the prediction covers what a real run's tracker sees.

#include <gtest/gtest.h>

#include <string>

#include "expect_error.h"
#include "tally/error/error.h"
#include "tally/train/memory_check.h"
#include "tally/train/trainer.h"
#include "temp_dir.h"

namespace tally::train {
namespace {

TrainConfig small_run(const std::string& out = "") {
  TrainConfig c;
  c.out = out;
  c.corpus_bytes = 1 << 16;
  c.d_model = 64;
  c.num_layers = 2;
  c.num_heads = 2;
  c.context_length = 64;
  c.batch_size = 32;
  c.steps = 3;
  c.warmup_steps = 1;
  return c;
}

/// A run whose step peak is above what stays after it plus the books' own work (the bandwidth
/// probe's 192 MiB), so that its need grows with the batch. Only predicted, never run.
TrainConfig wide_run() {
  TrainConfig c = small_run();
  c.d_model = 256;
  c.num_layers = 4;
  c.context_length = 256;
  return c;
}

TEST(MemoryCheck, ARunThatFitsPasses) {
  EXPECT_NO_THROW(check_memory_fits(small_run(), 2, {{"a roomy bound", int64_t{1} << 40}}));
  EXPECT_NO_THROW(check_memory_fits(small_run(), 2, {}));  // nothing known to check against
}

TEST(MemoryCheck, TheNeedGrowsWithTheBatchAndIsAboveTheTensorsPeak) {
  TrainConfig c = wide_run();
  const MemoryNeed whole = predict_memory_need(c, 2);
  c.batch_size = 4;
  const MemoryNeed quarter = predict_memory_need(c, 2);
  EXPECT_GT(whole.tensor_bytes, quarter.tensor_bytes);
  EXPECT_EQ(whole.allocator_bytes, whole.tensor_bytes / 8);
  EXPECT_EQ(whole.total(), whole.tensor_bytes + whole.allocator_bytes + whole.process_bytes);
}

// Between the need of batch 20 and that of batch 21: the refusal names batch 20.
TEST(MemoryCheck, ARefusalGivesBothFiguresTheBoundAndTheLargestBatchThatFits) {
  TrainConfig c = wide_run();
  c.batch_size = 20;
  const int64_t fits = predict_memory_need(c, 2).total();
  c.batch_size = 21;
  ASSERT_GT(predict_memory_need(c, 2).total(), fits);
  const TrainConfig run = wide_run();
  test::expect_error<OutOfMemoryError>(
      [&] { check_memory_fits(run, 2, {{"a test's bound", fits}, {"a roomier one", fits * 4}}); },
      {"not enough memory for this run: it needs about ", describe_bytes(predict_memory_need(run, 2).total()),
       describe_bytes(fits) + " is available under a test's bound", "--batch-size 20 would fit", "--no-memory-check"});
}

// Ranks of a data-parallel job on one machine check at once: each gets its share of a bound they
// share (the machine's memory, a cgroup), but all of its own address-space limit.
TEST(MemoryCheck, ProcessesOnOneMachineEachGetTheirShareOfASharedBound) {
  const TrainConfig run = small_run();
  const int64_t need = predict_memory_need(run, 2).total();
  const machine::MemoryBound machine_memory{"a test's machine", need * 3, /*per_process=*/false};
  EXPECT_NO_THROW(check_memory_fits(run, 2, {machine_memory}, 3));
  test::expect_error<OutOfMemoryError>([&] { check_memory_fits(run, 2, {machine_memory}, 4); },
                                       {describe_bytes(need * 3 / 4) + " is available under a test's machine",
                                        "(its share for each of 4 processes on this machine)"});
  EXPECT_NO_THROW(check_memory_fits(run, 2, {{"a test's address-space limit", need * 3, /*per_process=*/true}}, 4));
}

TEST(MemoryCheck, WhenNoBatchFitsItSaysWhatBatchOneNeeds) {
  test::expect_error<OutOfMemoryError>([&] { check_memory_fits(small_run(), 2, {{"a tiny bound", 1 << 20}}); },
                                       {"even --batch-size 1 would need", "a smaller model would fit"});
}

// The prediction's tensors cover what the memory tracker sees in the real run.
TEST(MemoryCheck, ThePredictionCoversARealRunsTrackedPeak) {
  test::TempDir dir;
  const TrainConfig c = small_run(dir.file("run").string());
  const TrainResult r = train(c, false);
  const int64_t tracked = r.summary["memory"]["tracked_peak_total"].get<int64_t>();
  EXPECT_GE(predict_memory_need(c, 2).tensor_bytes, tracked);
}

}  // namespace
}  // namespace tally::train
