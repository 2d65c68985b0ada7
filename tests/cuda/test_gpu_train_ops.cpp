// What training a language model on the GPU needs beyond the layers, against the CPU: an
// embedding's gather and scatter (index_select, index_add), the optimizers' pointwise ops
// (addcmul, addcdiv, lerp), the FP8 linear layer, cross_entropy forward and backward, the Adam, AdamW and SGD updates
// (bit for bit), the prefetcher's pinned, non-blocking batches, and a few steps of a whole
// TransformerLM.

#include <functional>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "data/data_test_util.h"
#include "gpu_test.h"

using namespace tally;
using namespace tally::testing_gpu;

TEST(CudaTrainOps, IndexSelectEveryDtypeAndDim) {
  TALLY_REQUIRE_GPU();
  for (Dtype d : {kFloat32, kFloat64, kFloat16, kBFloat16, kFloat8_e4m3fn, kInt32, kInt64, kUInt8, kInt8, kInt16, kBool}) {
    Tensor x = sample({4, 5, 6}, d == kFloat8_e4m3fn ? kFloat32 : d, 1);
    if (d == kFloat8_e4m3fn) x = x.to(d);
    for (int64_t dim : {0, 1, 2, -1}) {
      SCOPED_TRACE(std::string(dtype_name(d)) + " dim " + std::to_string(dim));
      const int64_t n = x.size(dim);
      const Tensor idx = tensor({n - 2, 0, -1, n - 2, 1});  // repeated and negative too
      Tensor cpu = index_select(x, dim, idx), gpu = index_select(x.to(kGpu), dim, idx.to(kGpu));
      ASSERT_TRUE(gpu.is_cuda());
      if (d == kFloat8_e4m3fn) cpu = cpu.to(kFloat32), gpu = gpu.to(kFloat32);  // exact: compared as float32
      EXPECT_TRUE(same_as_cpu(gpu, cpu, 0));
    }
  }
  // A strided source and an int32 index.
  Tensor x = sample({6, 8}, kFloat32, 2).t();
  EXPECT_TRUE(same_as_cpu(index_select(x.to(kGpu), 1, tensor({5, 1}, kInt32).to(kGpu)), index_select(x, 1, tensor({5, 1}, kInt32)), 0));
  // Out of range: the same IndexError as on the CPU, raised before any kernel runs.
  try {
    index_select(ones({3}, kGpu), 0, tensor({1, 5}).to(kGpu));
    FAIL() << "no error";
  } catch (const IndexError& e) {
    EXPECT_NE(std::string(e.what()).find("index 5 is out of bounds for dimension 0 with size 3"), std::string::npos) << e.what();
  }
}

TEST(CudaTrainOps, IndexAddAccumulatesRepeatedRows) {
  TALLY_REQUIRE_GPU();
  const Tensor index = tensor({1, 0, 1, -1, 1, 3});
  for (Dtype d : {kFloat64, kFloat32, kBFloat16, kFloat16, kInt32, kInt64}) {
    for (int64_t dim : {0, 1}) {
      SCOPED_TRACE(std::string(dtype_name(d)) + " dim " + std::to_string(dim));
      Tensor x = sample({4, 4, 3}, d, 3);
      std::vector<int64_t> src_sizes = {4, 4, 3};
      src_sizes[static_cast<size_t>(dim)] = index.numel();
      Tensor src = sample(src_sizes, d, 4);
      // The GPU adds repeated rows in no fixed order: sums may differ by rounding, not more.
      EXPECT_TRUE(same_as_cpu(index_add(x.to(kGpu), dim, index.to(kGpu), src.to(kGpu)), index_add(x, dim, index, src), 4 * tolerance(d)));
    }
  }
  try {
    index_add(zeros({3}, kGpu), 0, tensor({-4}).to(kGpu), ones({1}, kGpu));
    FAIL() << "no error";
  } catch (const IndexError& e) {
    EXPECT_NE(std::string(e.what()).find("index -4 is out of bounds"), std::string::npos) << e.what();
  }
  // The embedding's backward: gradients of the gathered rows go home to the table.
  const Tensor ids = tensor({3, 3, 7, 0, 3});
  expect_same_on_both([&](const std::vector<Tensor>& v) { return index_select(v[0], 0, ids.to(v[0].device())); },
                      {sample({10, 4}, kFloat64, 5)}, 1e-12, 1e-12);
}

TEST(CudaTrainOps, AddcmulAddcdivLerp) {
  TALLY_REQUIRE_GPU();
  for (Dtype d : {kFloat32, kFloat64, kFloat16, kBFloat16, kInt32, kInt64}) {
    SCOPED_TRACE(std::string(dtype_name(d)));
    Tensor s = sample({5, 7}, d, 7), a = sample({7, 5}, d, 8).t(), b = sample({1, 7}, d, 9);
    const double t = 4 * tolerance(d);
    EXPECT_TRUE(same_as_cpu(addcmul(s.to(kGpu), a.to(kGpu), b.to(kGpu), 0.5), addcmul(s, a, b, 0.5), t, t));
    if (!is_floating_point(d)) continue;
    Tensor pos = b.abs() + 0.5;
    EXPECT_TRUE(same_as_cpu(addcdiv(s.to(kGpu), a.to(kGpu), pos.to(kGpu), -0.25), addcdiv(s, a, pos, -0.25), t, t));
    for (double w : {0.1, 0.5, 0.9}) EXPECT_TRUE(same_as_cpu(lerp(s.to(kGpu), a.to(kGpu), w), lerp(s, a, w), t, t));
    // The in-place forms the optimizers use.
    Tensor g = s.to(kGpu);
    g.addcmul_(a.to(kGpu), a.to(kGpu), 0.1).lerp_(b.to(kGpu), 0.2);
    Tensor c = s.clone();
    c.addcmul_(a, a, 0.1).lerp_(b, 0.2);
    EXPECT_TRUE(same_as_cpu(g, c, t, t));
  }
}

// The FP8 layer on the GPU: its product is scaled_mm through cuBLASLt, its scales follow the same
// amaxes as on the CPU, and its gradients are the recipe's E5M2 products there too.
TEST(CudaTrainOps, Fp8LinearForwardAndBackwardMatchTheCpu) {
  TALLY_REQUIRE_GPU();
  const cuda::DeviceProperties p = cuda::get_device_properties(0);
  if (p.major < 9 && !(p.major == 8 && p.minor >= 9)) GTEST_SKIP() << p.name << " has no FP8 tensor cores";
  Generator gen(3);
  const Tensor x0 = randn({16, 64}, {}, &gen), w0 = randn({32, 64}, {}, &gen) * 0.1, b0 = randn({32}, {}, &gen);
  const Tensor g = randn({16, 32}, {}, &gen);
  amp::Fp8LinearState on_cpu, on_gpu;
  for (int step = 1; step <= 2; ++step) {  // step 2 casts with the scales step 1's amaxes gave
    SCOPED_TRACE("step " + std::to_string(step));
    Tensor x = x0.clone().requires_grad_(), w = w0.clone().requires_grad_(), b = b0.clone().requires_grad_();
    Tensor xg = x0.to(kGpu).requires_grad_(), wg = w0.to(kGpu).requires_grad_(), bg = b0.to(kGpu).requires_grad_();
    Tensor y = amp::fp8_linear(x, w, b, on_cpu), yg = amp::fp8_linear(xg, wg, bg, on_gpu);
    y.backward(g);
    yg.backward(g.to(kGpu));
    EXPECT_DOUBLE_EQ(on_gpu.input.scale(), on_cpu.input.scale());
    EXPECT_DOUBLE_EQ(on_gpu.grad_output.scale(), on_cpu.grad_output.scale());
    // Hopper's FP8 tensor cores accumulate with fewer bits than float32 (about 1e-3 relative).
    EXPECT_TRUE(same_as_cpu(yg.detach(), y.detach(), 1e-2, 1e-2));
    EXPECT_TRUE(same_as_cpu(xg.grad(), x.grad(), 1e-2, 1e-2));
    EXPECT_TRUE(same_as_cpu(wg.grad(), w.grad(), 1e-2, 1e-2));
    EXPECT_TRUE(same_as_cpu(bg.grad(), b.grad(), 1e-5));
  }
}

TEST(CudaTrainOps, CrossEntropyForwardAndBackward) {
  TALLY_REQUIRE_GPU();
  const Tensor target = tensor({3, 0, -100, 9, 3, 1});
  for (Dtype d : {kFloat64, kFloat32, kBFloat16}) {
    for (Reduction r : {Reduction::Mean, Reduction::Sum, Reduction::None}) {
      for (double smoothing : {0.0, 0.1}) {
        SCOPED_TRACE(std::string(dtype_name(d)) + " reduction " + std::to_string(static_cast<int>(r)) + " smoothing " +
                     std::to_string(smoothing));
        const CrossEntropyOptions o{-100, r, smoothing};
        const double t = d == kBFloat16 ? 2e-2 : d == kFloat32 ? 1e-5 : 1e-12;
        expect_same_on_both([&](const std::vector<Tensor>& v) { return cross_entropy(v[0], target.to(v[0].device()), o); },
                            {sample({6, 10}, d, 10)}, t, t);
      }
    }
  }
  try {
    cross_entropy(zeros({2, 3}, kGpu), tensor({0, 3}).to(kGpu));
    FAIL() << "no error";
  } catch (const IndexError& e) {
    EXPECT_NE(std::string(e.what()).find("Target 3 is out of bounds"), std::string::npos) << e.what();
  }
}

TEST(CudaTrainOps, FusedUpdatesEqualTheCpuBitForBit) {
  TALLY_REQUIRE_GPU();
  using Make = std::function<std::unique_ptr<optim::Optimizer>(const Tensor&)>;
  const std::vector<std::pair<std::string, Make>> optimizers = {
      {"adamw", [](const Tensor& w) { return std::make_unique<optim::AdamW>(std::vector<Tensor>{w}, optim::AdamWOptions(1e-2).weight_decay(0.1)); }},
      {"adamw amsgrad",
       [](const Tensor& w) { return std::make_unique<optim::AdamW>(std::vector<Tensor>{w}, optim::AdamWOptions(1e-2).amsgrad(true)); }},
      {"adam l2", [](const Tensor& w) { return std::make_unique<optim::Adam>(std::vector<Tensor>{w}, optim::AdamOptions(1e-2).weight_decay(0.1)); }},
      {"sgd", [](const Tensor& w) { return std::make_unique<optim::SGD>(std::vector<Tensor>{w}, optim::SGDOptions(0.1)); }},
      {"sgd nesterov",
       [](const Tensor& w) {
         return std::make_unique<optim::SGD>(std::vector<Tensor>{w}, optim::SGDOptions(0.1).momentum(0.9).nesterov(true).weight_decay(0.01));
       }},
      {"sgd dampening",
       [](const Tensor& w) { return std::make_unique<optim::SGD>(std::vector<Tensor>{w}, optim::SGDOptions(0.1).momentum(0.9).dampening(0.2)); }},
      {"adagrad",
       [](const Tensor& w) {
         return std::make_unique<optim::Adagrad>(std::vector<Tensor>{w}, optim::AdagradOptions(0.1).lr_decay(0.01).weight_decay(0.01));
       }},
      {"rmsprop", [](const Tensor& w) { return std::make_unique<optim::RMSprop>(std::vector<Tensor>{w}, optim::RMSpropOptions(1e-2)); }},
      {"rmsprop momentum",
       [](const Tensor& w) {
         return std::make_unique<optim::RMSprop>(std::vector<Tensor>{w}, optim::RMSpropOptions(1e-2).momentum(0.9).weight_decay(0.01));
       }},
      {"rmsprop centered",
       [](const Tensor& w) { return std::make_unique<optim::RMSprop>(std::vector<Tensor>{w}, optim::RMSpropOptions(1e-2).centered(true)); }},
      {"rmsprop centered momentum",
       [](const Tensor& w) {
         return std::make_unique<optim::RMSprop>(std::vector<Tensor>{w}, optim::RMSpropOptions(1e-2).centered(true).momentum(0.5));
       }},
  };
  for (Dtype d : {kFloat32, kFloat64}) {
    for (const auto& [name, make] : optimizers) {
      SCOPED_TRACE(std::string(dtype_name(d)) + " " + name);
      auto run = [&](const Device& dev) {
        Tensor w = sample({37, 29}, d, 12).to(dev).detach().requires_grad_();
        std::unique_ptr<optim::Optimizer> opt = make(w);
        for (int step = 0; step < 5; ++step) {
          opt->zero_grad();
          (w * sample({37, 29}, d, 13 + static_cast<uint64_t>(step)).to(dev)).square().sum().backward();
          opt->step();
        }
        return w.detach();
      };
      const Tensor cpu = run(Device(kCPU)), gpu = run(kGpu);
      ASSERT_TRUE(gpu.is_cuda());
      EXPECT_TRUE(gpu.cpu().equal(cpu)) << "max |GPU - CPU| " << (gpu.cpu() - cpu).abs().max().item<double>();
    }
  }
  // bfloat16 parameters (stochastic rounding) have no GPU update: said, not run on the host.
  Tensor w = ones({4}, TensorOptions(kBFloat16).device(kGpu)).requires_grad_();
  w.sum().backward();
  optim::AdamW adamw({w}, optim::AdamWOptions());
  EXPECT_THROW(adamw.step(), NotImplementedError);
}

TEST(CudaTrainOps, PrefetcherHandsOverBatchesOnTheGpu) {
  TALLY_REQUIRE_GPU();
  data::test::TempDir dir;
  const data::TokenFile tokens = data::test::arange_file(dir, 500);
  const data::LoaderOptions options{.batch_size = 4, .context_length = 9, .sampling = data::Sampling::Random, .seed = 3};
  data::TokenLoader loader(tokens, options);
  data::Prefetcher prefetcher(data::TokenLoader(tokens, options), 2, kGpu);
  for (int i = 0; i < 12; ++i) {
    SCOPED_TRACE("batch " + std::to_string(i));
    const auto [x, y] = prefetcher.next();
    const auto [ex, ey] = loader.next();
    ASSERT_TRUE(x.is_cuda() && y.is_cuda());
    EXPECT_TRUE(x.cpu().equal(ex));
    EXPECT_TRUE(y.cpu().equal(ey));
    EXPECT_EQ(prefetcher.state(), loader.state());
  }
}

TEST(CudaTrainOps, TransformerLmStepsMatchTheCpu) {
  TALLY_REQUIRE_GPU();
  nn::TransformerConfig config;
  config.vocab_size = 64;
  config.context_length = 16;
  config.d_model = 32;
  config.num_layers = 2;
  config.num_heads = 4;
  const auto [cpu_model, gpu_model] = cpu_and_gpu<nn::TransformerLM>(config, 31);
  optim::AdamW cpu_opt(cpu_model->parameters(), optim::AdamWOptions(1e-2));
  optim::AdamW gpu_opt(gpu_model->parameters(), optim::AdamWOptions(1e-2));
  Generator data(32);
  for (int step = 0; step < 3; ++step) {
    SCOPED_TRACE("step " + std::to_string(step));
    const Tensor ids = randint(0, config.vocab_size, {2, 16}, TensorOptions(kInt64), &data);
    const Tensor targets = randint(0, config.vocab_size, {2, 16}, TensorOptions(kInt64), &data);
    cpu_opt.zero_grad();
    gpu_opt.zero_grad();
    Tensor lc = cpu_model->loss(ids, targets), lg = gpu_model->loss(ids.to(kGpu), targets.to(kGpu));
    lc.backward();
    lg.backward();
    EXPECT_TRUE(same_as_cpu(lg.detach(), lc.detach(), 1e-10));
    cpu_opt.step();
    gpu_opt.step();
  }
  expect_same_parameters(*gpu_model, *cpu_model, /*grads=*/false, 1e-9, 1e-10);
}
