// Views must cost the same on 16 elements as on 16M and must not allocate tensor memory: this
// program times view, transpose, slice, index and reshape (its view case) on both sizes and reads
// the caching allocator's counters around the calls, for bench/compare.py to check.
//
// Usage: views [--batches N]   (prints one JSON object per op and size)

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <functional>
#include <string>
#include <vector>

#include "tally/tally.h"

namespace {

using Clock = std::chrono::steady_clock;
using tally::Tensor;
using tally::indexing::Slice;

constexpr int kCallsPerBatch = 200000;

struct ViewCase {
  const char* name;
  std::function<Tensor(const Tensor&)> fn;
};

// Every case views a 2-D contiguous tensor; none of them may touch its elements.
std::vector<ViewCase> view_cases() {
  return {
      {"view", [](const Tensor& x) { return x.view({-1}); }},
      {"transpose", [](const Tensor& x) { return x.transpose(0, 1); }},
      {"slice", [](const Tensor& x) { return x.slice(0, 1, 3); }},
      {"index", [](const Tensor& x) { return x.index({1, Slice(0, 2)}); }},
      {"reshape", [](const Tensor& x) { return x.reshape({-1}); }},
  };
}

void run_case(const ViewCase& c, const Tensor& x, int batches) {
  auto& alloc = tally::CpuAllocator::get();
  int64_t sink = 0;  // read from every result so that no call can be dropped
  sink += c.fn(x).dim();  // warm-up
  alloc.reset_peak_stats();
  const tally::MemoryStats before = alloc.stats();
  std::string times;
  Tensor last;
  for (int b = 0; b < batches; ++b) {
    const auto t0 = Clock::now();
    for (int i = 0; i < kCallsPerBatch; ++i) {
      Tensor v = c.fn(x);
      sink += v.storage_offset() + v.size(0);
    }
    const double ns = std::chrono::duration<double, std::nano>(Clock::now() - t0).count() / kCallsPerBatch;
    if (b) times += ",";
    times += std::to_string(ns);
  }
  last = c.fn(x);  // held while the counters are read: a copying "view" would show up as live bytes
  const tally::MemoryStats after = alloc.stats();
  std::printf(
      "{\"name\": \"%s\", \"numel\": %lld, \"ns_per_call\": [%s], \"allocated_delta_bytes\": %lld, "
      "\"peak_delta_bytes\": %lld, \"num_allocs_delta\": %lld, \"shares_storage\": %s, \"sink\": %lld}\n",
      c.name, static_cast<long long>(x.numel()), times.c_str(),
      static_cast<long long>(after.total_allocated_bytes - before.total_allocated_bytes),
      static_cast<long long>(after.peak_total_allocated_bytes - before.total_allocated_bytes),
      static_cast<long long>(after.num_allocs - before.num_allocs), last.is_same_storage(x) ? "true" : "false",
      static_cast<long long>(sink % 1000));
  std::fflush(stdout);
}

}  // namespace

int main(int argc, char** argv) {
  int batches = 7;
  for (int i = 1; i + 1 < argc; ++i)
    if (std::string(argv[i]) == "--batches") batches = std::max(1, std::atoi(argv[i + 1]));
  try {
    const Tensor small = tally::randn({4, 4}), large = tally::randn({4096, 4096});
    // Sizes alternate so that drift on the shared machine hits both alike.
    for (const ViewCase& c : view_cases()) {
      run_case(c, small, batches);
      run_case(c, large, batches);
    }
  } catch (const std::exception& e) {
    std::fprintf(stderr, "views: %s\n", e.what());
    return 1;
  }
  return 0;
}
