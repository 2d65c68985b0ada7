// MemoryTracker's windows: a tracker made and ended inside another's life leaves the outer one's
// peaks whole (Note [Nested trackers] in tally/accounting/memory_tracker.h).

#include <gtest/gtest.h>

#include "tally/tally.h"

namespace tally {
namespace {

TEST(MemoryTracker, AnInnerTrackerLeavesTheOuterPeak) {
  for (Device device : {Device(kCPU), Device(kMeta)}) {
    SCOPED_TRACE(device.str());
    accounting::MemoryTracker outer(device);
    { Tensor big = empty({1 << 20}, TensorOptions(kFloat32).device(device)); }  // 4 MiB, freed at once
    const int64_t before = outer.peak_allocated_bytes();
    EXPECT_GE(before, int64_t{4} << 20);
    {
      accounting::MemoryTracker inner(device);  // restarts the counters' peaks for its own window
      Tensor small = empty({16}, TensorOptions(kFloat32).device(device));
      EXPECT_LT(inner.peak_allocated_bytes(), int64_t{4} << 20);
    }
    // The inner tracker's end gives the outer window its peak back (it read 64 bytes before).
    EXPECT_EQ(outer.peak_allocated_bytes(), before);
  }
}

TEST(MemoryTracker, APeakInsideTheInnerWindowCountsForTheOuter) {
  accounting::MemoryTracker outer;
  {
    accounting::MemoryTracker inner;
    { Tensor big = empty({1 << 21}); }  // 8 MiB, inside the inner window only
    EXPECT_GE(inner.peak_allocated_bytes(), int64_t{8} << 20);
  }
  EXPECT_GE(outer.peak_allocated_bytes(), int64_t{8} << 20);
}

}  // namespace
}  // namespace tally
