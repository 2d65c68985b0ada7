// The containers behind cheap dispatch: SmallVector (inline, then heap) and the object pools,
// and the allocator's cache of small blocks.

#include <gtest/gtest.h>

#include <cstdint>
#include <cstring>
#include <numeric>
#include <string>
#include <thread>
#include <vector>

#include "tally/tally.h"

namespace tally {
namespace {

using SV = SmallVector<int64_t, 4>;

TEST(SmallVector, StaysInlineUpToItsCapacityThenMovesToTheHeap) {
  SV v;
  const int64_t* inline_data = v.data();
  for (int64_t i = 0; i < 4; ++i) v.push_back(i);
  EXPECT_EQ(v.data(), inline_data);
  EXPECT_EQ(v.capacity(), 4u);
  for (int64_t i = 4; i < 100; ++i) v.push_back(i);
  EXPECT_NE(v.data(), inline_data);
  ASSERT_EQ(v.size(), 100u);
  for (int64_t i = 0; i < 100; ++i) EXPECT_EQ(v[static_cast<size_t>(i)], i);
}

TEST(SmallVector, PushBackOfItsOwnElementWhileGrowing) {
  SV v{7, 8, 9, 10};
  v.push_back(v[0]);  // the reference dies with the inline buffer: the value must be copied first
  EXPECT_EQ(v.vec(), (std::vector<int64_t>{7, 8, 9, 10, 7}));
}

TEST(SmallVector, CopyAndMoveInlineAndOnHeap) {
  for (size_t n : {size_t{3}, size_t{40}}) {
    SV a(n, 0);
    std::iota(a.begin(), a.end(), int64_t{1});
    SV b = a;
    EXPECT_EQ(a, b);
    EXPECT_NE(a.data(), b.data());
    SV c = std::move(b);
    EXPECT_EQ(c, a);
    EXPECT_TRUE(b.empty());  // NOLINT(bugprone-use-after-move): moved-from is empty and usable
    b.push_back(5);
    EXPECT_EQ(b.size(), 1u);
    SV d{1};
    d = std::move(c);
    EXPECT_EQ(d, a);
    d = d;  // self-assignment keeps the elements
    EXPECT_EQ(d, a);
  }
}

TEST(SmallVector, InsertEraseResizeAssign) {
  SV v{1, 2, 3};
  v.insert(v.begin() + 1, 9);
  EXPECT_EQ(v.vec(), (std::vector<int64_t>{1, 9, 2, 3}));
  const std::vector<int64_t> more{5, 6, 7};
  v.insert(v.begin(), more.begin(), more.end());
  EXPECT_EQ(v.vec(), (std::vector<int64_t>{5, 6, 7, 1, 9, 2, 3}));
  v.erase(v.begin() + 3);
  EXPECT_EQ(v.vec(), (std::vector<int64_t>{5, 6, 7, 9, 2, 3}));
  v.resize(2);
  EXPECT_EQ(v.vec(), (std::vector<int64_t>{5, 6}));
  v.resize(4, -1);
  EXPECT_EQ(v.vec(), (std::vector<int64_t>{5, 6, -1, -1}));
  v.assign(3, 4);
  EXPECT_EQ(v.vec(), (std::vector<int64_t>{4, 4, 4}));
  EXPECT_EQ(SV(IntArrayRef({2, 3})).vec(), (std::vector<int64_t>{2, 3}));
}

TEST(SmallVector, TensorsWithManyDimsSpillToTheHeap) {
  // 8 dims exceed DimVector's inline 6: sizes, strides and loops must still be right.
  Tensor x = arange(256, kFloat32).view({2, 2, 2, 2, 2, 2, 2, 2});
  Tensor y = x.permute({7, 6, 5, 4, 3, 2, 1, 0}) * 2;
  EXPECT_EQ(y.dim(), 8);
  EXPECT_EQ(y.sum().item<double>(), 2 * 255 * 256 / 2);
  EXPECT_TRUE(y.permute({7, 6, 5, 4, 3, 2, 1, 0}).equal(x * 2));
}

TEST(ObjectPool, BlocksAreReusedAndSizesKeptApart) {
  void* a = detail::pool_allocate(48);
  detail::pool_deallocate(a, 48);
  void* b = detail::pool_allocate(40);  // same 16-byte class as 48: the freed block comes back
  void* c = detail::pool_allocate(200);
  EXPECT_NE(b, c);
#if !defined(__SANITIZE_ADDRESS__)
  EXPECT_EQ(a, b);
#endif
  detail::pool_deallocate(b, 40);
  detail::pool_deallocate(c, 200);
  void* big = detail::pool_allocate(detail::kMaxPooledBytes + 1);  // beyond the pools: plain malloc
  detail::pool_deallocate(big, detail::kMaxPooledBytes + 1);
}

TEST(ObjectPool, TensorsCreatedOnOneThreadAndFreedOnAnother) {
  std::vector<Tensor> made;
  std::thread producer([&] {
    for (int i = 0; i < 1000; ++i) made.push_back(full({3}, i));
  });
  producer.join();  // its pools are gone: freeing here must not touch them
  double total = 0;
  for (const Tensor& t : made) total += t.sum().item<double>();
  EXPECT_EQ(total, 3.0 * 999 * 1000 / 2);
  made.clear();
}

TEST(CpuAllocatorSmallBlocks, FreedBlocksAreReusedAndAccounted) {
  CpuAllocator& alloc = CpuAllocator::get();
  { Tensor warm = empty({1000}); }  // puts a block of this class in the cache
  const MemoryStats before = alloc.stats();
  {
    Tensor t = empty({1000});
    const MemoryStats during = alloc.stats();
    EXPECT_EQ(during.num_os_allocs, before.num_os_allocs);  // served from the cache
    EXPECT_EQ(during.total_allocated_bytes, before.total_allocated_bytes + 4000);
    EXPECT_EQ(during.reserved_bytes, before.reserved_bytes);
  }
  const MemoryStats freed = alloc.stats();
  EXPECT_EQ(freed.total_allocated_bytes, before.total_allocated_bytes);
  EXPECT_GE(freed.cached_bytes, 4000);  // the block went back to the cache, not to the OS
  alloc.empty_cache();
  const MemoryStats after = alloc.stats();
  EXPECT_EQ(after.cached_bytes, 0);
  EXPECT_EQ(after.reserved_bytes, freed.reserved_bytes - freed.cached_bytes);
}

// A request gets the block of its class freed last, small or large: that block is the one most
// likely still in the CPU's caches (handing out the one freed first made a [2048, 2048] op read
// and write cold memory: relu 0.41 ms against 0.15).
TEST(CpuAllocator, ReusesTheBlockFreedLast) {
  CpuAllocator& alloc = CpuAllocator::get();
  for (const int64_t bytes : {int64_t{4000}, int64_t{16} << 20}) {
    void* first = alloc.allocate(bytes, MemoryCategory::Other);
    void* second = alloc.allocate(bytes, MemoryCategory::Other);
    alloc.deallocate(first, bytes, MemoryCategory::Other);
    alloc.deallocate(second, bytes, MemoryCategory::Other);
    void* again = alloc.allocate(bytes, MemoryCategory::Other);
    EXPECT_EQ(again, second) << bytes << " bytes";
    void* next = alloc.allocate(bytes, MemoryCategory::Other);
    EXPECT_EQ(next, first) << bytes << " bytes";
    alloc.deallocate(again, bytes, MemoryCategory::Other);
    alloc.deallocate(next, bytes, MemoryCategory::Other);
  }
  alloc.empty_cache();
}

// Every size class boundary, including the sizes just below 1 MiB that once mapped one past the
// last small class, gives a writable 64-byte aligned block and leaves the counters balanced.
// Under ASan this also checks that each aligned_alloc size is a multiple of the alignment.
TEST(CpuAllocatorSmallBlocks, EverySizeUpToTheLargePathIsAlignedAndBalanced) {
  CpuAllocator& alloc = CpuAllocator::get();
  const MemoryStats before = alloc.stats();
  std::vector<int64_t> sizes = {0, 1, 63, 64, 65, 80, 127, 129, 193, 255, 257, 4000};
  for (int64_t top = int64_t{1} << 20, d = 0; d <= 3; ++d) sizes.push_back(top - d);
  for (int64_t n = 896 * 1024 - 2; n <= 896 * 1024 + 2; ++n) sizes.push_back(n);
  for (int64_t n : sizes) {
    void* p = alloc.allocate(n, MemoryCategory::Other);
    ASSERT_NE(p, nullptr) << n;
    EXPECT_EQ(reinterpret_cast<uintptr_t>(p) % 64, 0u) << n;
    if (n > 0) {
      std::memset(p, 0xab, static_cast<size_t>(n));
    }
    alloc.deallocate(p, n, MemoryCategory::Other);
  }
  const MemoryStats after = alloc.stats();
  EXPECT_EQ(after.total_allocated_bytes, before.total_allocated_bytes);
  alloc.empty_cache();
  EXPECT_EQ(alloc.stats().cached_bytes, 0);
}

TEST(CpuAllocator, MemoryTheOsRefusesIsATypedErrorAndLeavesTheCountersBalanced) {
  CpuAllocator& alloc = CpuAllocator::get();
  const MemoryStats before = alloc.stats();
  try {
    // 256 TiB of float32: more than a 47-bit user address space holds, so even an OS that
    // overcommits without limit refuses it.
    Tensor huge = empty({int64_t{1} << 46});
    FAIL() << "allocated 256 TiB";
  } catch (const OutOfMemoryError& e) {
    EXPECT_NE(std::string(e.what()).find("CPU out of memory: tried to allocate 262144.00 GiB (281474976710656 bytes)"),
              std::string::npos)
        << e.what();
  }
  const MemoryStats after = alloc.stats();
  EXPECT_EQ(after.total_allocated_bytes, before.total_allocated_bytes);
  EXPECT_EQ(after.reserved_bytes, before.reserved_bytes - before.cached_bytes);  // the cache was emptied to retry
  Tensor fine = ones({1024});  // and the allocator still works
  EXPECT_EQ(fine.sum().item<float>(), 1024.0f);
}

}  // namespace
}  // namespace tally
