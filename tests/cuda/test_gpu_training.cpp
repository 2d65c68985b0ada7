// The lecture's sections on the GPU: tensors_on_gpu (memory_allocated grows by exactly the bytes
// moved), gradients on the GPU equal to the CPU's, and the ledger's 2 : 4 : 6 split read off
// GPU-timed ops. Plus the caching allocator and pinned, non-blocking copies.

#include "gpu_test.h"

using namespace tally;
using namespace tally::testing_gpu;

TEST(CudaLecture, TensorsOnGpu) {
  TALLY_REQUIRE_GPU();
  // The lecture: x = torch.zeros(32, 32) lives on the CPU; y = x.to("cuda:0") moves it.
  const int64_t before = cuda::memory_allocated();
  Tensor x = zeros({32, 32});
  EXPECT_EQ(x.device(), Device(kCPU));
  Tensor y = x.to(Device("cuda:0"));
  EXPECT_EQ(y.device(), Device(kCUDA, 0));
  Tensor z = zeros({32, 32}, Device("cuda:0"));
  EXPECT_EQ(cuda::memory_allocated() - before, 2 * (32 * 32 * 4));
  {
    Tensor w = empty({1000, 3}, TensorOptions(kBFloat16).device(kGpu));
    EXPECT_EQ(cuda::memory_allocated() - before, 2 * (32 * 32 * 4) + 1000 * 3 * 2);
  }
  EXPECT_EQ(cuda::memory_allocated() - before, 2 * (32 * 32 * 4));
  EXPECT_GE(cuda::memory_reserved(), cuda::memory_allocated());
}

TEST(CudaLecture, TrackerCategoriesOnTheGpu) {
  TALLY_REQUIRE_GPU();
  accounting::MemoryTracker tracker(kGpu);
  Tensor w = zeros({64, 32}, kGpu);
  accounting::set_memory_category(w, MemoryCategory::Parameters);
  Tensor g = zeros({64, 32}, kGpu);
  accounting::set_memory_category(g, MemoryCategory::Gradients);
  EXPECT_EQ(tracker.allocated_bytes(MemoryCategory::Parameters), 64 * 32 * 4);
  EXPECT_EQ(tracker.allocated_bytes(MemoryCategory::Gradients), 64 * 32 * 4);
  EXPECT_EQ(tracker.allocated_since_start(), 2 * 64 * 32 * 4);
}

TEST(CudaAllocator, ReusesFreedBlocksAndEmptiesItsCache) {
  TALLY_REQUIRE_GPU();
  cuda::empty_cache();
  const MemoryStats s0 = cuda::memory_stats();
  for (int i = 0; i < 10; ++i) Tensor t = empty({1 << 20}, kGpu);  // 4 MiB, freed each time
  const MemoryStats s1 = cuda::memory_stats();
  EXPECT_EQ(s1.num_os_allocs - s0.num_os_allocs, 1) << "a freed block of the same class is reused";
  EXPECT_EQ(s1.total_allocated_bytes, s0.total_allocated_bytes);
  EXPECT_GT(s1.cached_bytes, 0);
  cuda::empty_cache();
  EXPECT_EQ(cuda::memory_stats().cached_bytes, 0);
  EXPECT_EQ(cuda::memory_reserved(), s0.reserved_bytes);
  try {
    empty({int64_t{1} << 45}, kGpu);  // 128 TiB
    FAIL();
  } catch (const OutOfMemoryError& e) {
    EXPECT_NE(std::string(e.what()).find("CUDA out of memory"), std::string::npos) << e.what();
  }
  Tensor after = ones({10}, kGpu);  // the device still works after a refused allocation
  EXPECT_EQ(after.sum().item<double>(), 10.0);
}

TEST(CudaCopies, PinnedNonBlockingRoundTrip) {
  TALLY_REQUIRE_GPU();
  Tensor host = randn({1 << 20});
  Tensor pinned = host.pin_memory();
  EXPECT_TRUE(pinned.is_pinned());
  EXPECT_TRUE(pinned.equal(host));
  Tensor g = pinned.to(kGpu, /*non_blocking=*/true);
  Tensor back = empty({1 << 20}).pin_memory();
  back.copy_(g * 2);
  cuda::synchronize();
  EXPECT_TRUE(back.equal(host * 2));
  EXPECT_THROW(g.pin_memory(), DeviceError);
}

TEST(CudaAutograd, MlpGradientsMatchTheCpu) {
  TALLY_REQUIRE_GPU();
  Generator gen(7);
  Tensor x = randn({16, 32}, kFloat64, &gen);
  Tensor w1 = randn({32, 64}, kFloat64, &gen) * 0.2, w2 = randn({64, 10}, kFloat64, &gen) * 0.2;
  auto run = [&](const Device& d) {
    Tensor a = w1.to(d).detach().requires_grad_(), b = w2.to(d).detach().requires_grad_();
    Tensor h = gelu(matmul(x.to(d), a));
    Tensor loss = (matmul(h, b).log_softmax(-1) * -1).mean() + h.square().sum() * 1e-3;
    loss.backward();
    return std::tuple{loss.detach(), a.grad(), b.grad()};
  };
  auto [lc, ac, bc] = run(Device(kCPU));
  auto [lg, ag, bg] = run(kGpu);
  EXPECT_TRUE(ag.is_cuda());
  EXPECT_TRUE(same_as_cpu(lg, lc, 1e-12));
  EXPECT_TRUE(same_as_cpu(ag, ac, 1e-10));
  EXPECT_TRUE(same_as_cpu(bg, bc, 1e-10));
  // Crossing devices is differentiable: the gradient comes home.
  Tensor leaf = randn({4}, kFloat64).requires_grad_();
  (leaf.to(kGpu) * 3).sum().backward();
  EXPECT_TRUE(leaf.grad().is_cpu());
  EXPECT_TRUE(leaf.grad().equal(full({4}, 3.0, kFloat64)));
}

TEST(CudaLedger, TwoFourSixReadOffGpuTimedOps) {
  TALLY_REQUIRE_GPU();
  const int64_t B = 1024, D = 512, K = 256;
  Tensor x = ones({B, D}, kGpu);
  Tensor w1 = (ones({D, D}, kGpu) * 0.01).requires_grad_();
  Tensor w2 = (ones({D, K}, kGpu) * 0.01).requires_grad_();
  matmul(x, w2.detach());  // the first product creates cuBLASLt's handle: GPU-idle time the events would see
  accounting::FlopCounter counter;
  Tensor loss = matmul(matmul(x, w1), w2).mean();
  loss.backward();
  const auto fwd = counter.op("matmul", accounting::Phase::Forward);
  const auto bwd = counter.op("matmul", accounting::Phase::Backward);
  EXPECT_EQ(fwd.flops, 2 * B * D * D + 2 * B * D * K);
  EXPECT_EQ(bwd.flops, 4 * B * D * K + 2 * B * D * D);  // x needs no gradient
  EXPECT_GT(fwd.seconds, 0);
  EXPECT_GT(bwd.seconds, 0);
  EXPECT_LT(fwd.seconds, 0.1);  // GPU time of two small matmuls, not a host-side wait
  EXPECT_TRUE(w1.grad().is_cuda());
}
