// Several threads running backward() at once over graphs that share leaves and nodes (Note
// [Concurrent backward] in core/autograd_meta.h): every gradient arrives exactly once, a shared
// node freed by one thread is an error for the others rather than a crash, and the counters the
// threads share (memory categories, the generator, each thread's ledger) stay exact. The CI runs
// these under ThreadSanitizer too (scripts/test.sh).

#include <gtest/gtest.h>

#include <atomic>
#include <functional>
#include <latch>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "tally/tally.h"

namespace tally {
namespace {

constexpr int kThreads = 4;
constexpr int kIterations = 2000;

/// Runs fn(i) for i in [0, threads) on that many threads, released together; an exception that
/// escapes one fails the test with its message.
void run_threads(int threads, const std::function<void(int)>& fn) {
  std::latch start(threads);
  std::mutex mu;
  std::vector<std::string> failures;
  std::vector<std::thread> pool;
  for (int i = 0; i < threads; ++i)
    pool.emplace_back([&, i] {
      start.arrive_and_wait();
      try {
        fn(i);
      } catch (const std::exception& e) {
        std::lock_guard lock(mu);
        failures.emplace_back(e.what());
      }
    });
  for (std::thread& t : pool) t.join();
  for (const std::string& f : failures) ADD_FAILURE() << "a thread raised: " << f;
}

/// Whether every element of t equals v.
bool all_equal(const Tensor& t, double v) { return t.defined() && t.equal(full_like(t, v)); }

TEST(ConcurrentBackward, ASharedLeafGetsEveryThreadsGradient) {
  Tensor w = zeros({16}, kFloat64).requires_grad_();
  run_threads(kThreads, [&](int) {
    for (int i = 0; i < kIterations; ++i) (w * 2.0).sum().backward();
  });
  EXPECT_TRUE(all_equal(w.grad(), 2.0 * kThreads * kIterations)) << w.grad();
}

// h's node keeps w for its backward: the threads read saved tensors of one node at once, and
// the retained gradient of h is summed under that node's lock.
TEST(ConcurrentBackward, ASharedNonLeafWithARetainedGraph) {
  const int64_t activations_before = accounting::MemoryTracker().allocated_bytes(MemoryCategory::Activations);
  Tensor w = ones({16}, kFloat64).requires_grad_();
  {
    Tensor h = w * w;
    h.retain_grad();
    run_threads(kThreads, [&](int) {
      for (int i = 0; i < kIterations; ++i) (h * 2.0).sum().backward({}, true);
    });
    EXPECT_TRUE(all_equal(w.grad(), 4.0 * kThreads * kIterations)) << w.grad();
    EXPECT_TRUE(all_equal(h.grad(), 2.0 * kThreads * kIterations)) << h.grad();
  }
  // Every node the threads made has let go of what it kept.
  EXPECT_EQ(accounting::MemoryTracker().allocated_bytes(MemoryCategory::Activations), activations_before);
}

// Without retain_graph the first thread through h's node frees its saved tensors; the others
// then get PyTorch's freed-graph error, and the gradient counts exactly the passes that ran.
TEST(ConcurrentBackward, ANodeFreedByOneThreadIsAnErrorForTheOthers) {
  for (int round = 0; round < 50; ++round) {
    Tensor w = ones({16}, kFloat64).requires_grad_();
    Tensor h = w * w;
    std::atomic<int> done{0}, refused{0};
    run_threads(kThreads, [&](int) {
      try {
        (h * 2.0).sum().backward();
        ++done;
      } catch (const ValueError& e) {
        ASSERT_NE(std::string(e.what()).find("backward through the graph a second time"), std::string::npos) << e.what();
        ++refused;
      }
    });
    ASSERT_EQ(done + refused, kThreads);
    ASSERT_GE(done, 1);
    ASSERT_TRUE(all_equal(w.grad(), 4.0 * done)) << "round " << round << ": " << done << " passes ran, grad " << w.grad();
  }
}

// A module shared by the threads, each with its own batch: its parameters' gradients are the sums
// of every thread's (integer inputs keep the sums exact in any order). Matmuls run through oneDNN
// from several threads at once.
TEST(ConcurrentBackward, ASharedModuleSumsEveryThreadsBatch) {
  Generator g(3);
  nn::Linear layer(8, 4, true, TensorOptions(kFloat64), &g);
  std::vector<Tensor> batches;
  for (int t = 0; t < kThreads; ++t) batches.push_back(randint(-3, 4, {5, 8}, TensorOptions(kFloat64), &g));
  run_threads(kThreads, [&](int t) {
    for (int i = 0; i < kIterations / 10; ++i) layer.forward(batches[t]).sum().backward();
  });
  Tensor rows = zeros({8}, kFloat64);
  for (const Tensor& b : batches) rows = rows + b.sum(0);
  // d(sum(x W^T + b))/dW[o, i] = sum over rows of x[:, i], for every output o.
  EXPECT_TRUE(layer.weight.grad().equal(rows.mul(kIterations / 10.0).expand({4, 8})));
  EXPECT_TRUE(all_equal(layer.bias.grad(), 5.0 * kThreads * (kIterations / 10)));
}

// Draws from one generator on several threads take disjoint counters: together they consume
// exactly what as many draws on one thread consume.
TEST(ConcurrentBackward, OneGeneratorDrawnFromByEveryThread) {
  Generator g(11);
  const uint64_t before = g.get_state().offset;
  (void)randn({64}, {}, &g);
  const uint64_t per_draw = g.get_state().offset - before;
  run_threads(kThreads, [&](int) {
    for (int i = 0; i < kIterations; ++i) (void)randn({64}, {}, &g);
  });
  EXPECT_EQ(g.get_state().offset - before, per_draw * (1 + kThreads * kIterations));
}

// The ledger's observer is per thread: a FlopCounter made on one thread counts that thread's
// ops only, however many others run backward at the same time.
TEST(ConcurrentBackward, EachThreadsLedgerCountsItsOwnOps) {
  Tensor w = ones({32, 32}).requires_grad_();
  Tensor x = ones({8, 32});
  matmul(x, w).sum().backward();  // from now on each pass adds into w.grad(), which the ledger counts
  int64_t one_pass = 0;
  {
    accounting::FlopCounter counter;
    matmul(x, w).sum().backward();
    one_pass = counter.total_flops(accounting::Phase::Backward);
  }
  ASSERT_GT(one_pass, 0);
  std::vector<int64_t> counted(kThreads);
  run_threads(kThreads, [&](int t) {
    accounting::FlopCounter counter;
    for (int i = 0; i < kIterations / 10; ++i) matmul(x, w).sum().backward();
    counted[static_cast<size_t>(t)] = counter.total_flops(accounting::Phase::Backward);
  });
  for (int64_t c : counted) EXPECT_EQ(c, one_pass * (kIterations / 10));
}

}  // namespace
}  // namespace tally
