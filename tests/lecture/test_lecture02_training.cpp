// The second half of the lecture as tests: module_parameters, custom_model, note_about_randomness,
// data_loading, optimizer and train_loop, with the memory of a training step on the books.

#include <gtest/gtest.h>

#include <cmath>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <unistd.h>

#include "tally/tally.h"

namespace tally {
namespace {

constexpr int kF32 = 4;  // bytes per float32 element

int64_t live(const accounting::MemoryTracker& t, MemoryCategory c) { return t.allocated_bytes(c); }
int64_t peak(const accounting::MemoryTracker& t, MemoryCategory c) { return t.peak_allocated_bytes(c); }

TEST(LectureTraining, ModuleParameters) {
  // w = nn.Parameter(torch.randn(input_dim, output_dim)): x @ w grows like √input_dim ...
  const int64_t input_dim = 16384, output_dim = 32;
  Generator gen(0);
  Tensor x = randn({input_dim}, {}, &gen);
  nn::Parameter w(randn({input_dim, output_dim}, {}, &gen));
  const double raw = matmul(x, w).abs().mean().item<float>();
  EXPECT_GT(raw, 0.3 * std::sqrt(static_cast<double>(input_dim)));  // E|N(0, n)| = √(2n/π) ≈ 0.8·√n
  EXPECT_LT(raw, 1.3 * std::sqrt(static_cast<double>(input_dim)));
  // ... and dividing the init by √input_dim (Xavier's point) keeps it O(1).
  nn::Parameter scaled(randn({input_dim, output_dim}, {}, &gen) / std::sqrt(static_cast<double>(input_dim)));
  const double kept = matmul(x, scaled).abs().mean().item<float>();
  EXPECT_GT(kept, 0.3);
  EXPECT_LT(kept, 1.3);
  EXPECT_TRUE(w.requires_grad());
}

TEST(LectureTraining, CustomModel) {
  const int64_t D = 64, num_layers = 2, B = 8;
  nn::Cruncher model(D, num_layers);
  std::vector<std::string> names;
  for (const auto& [name, p] : model.state_dict()) names.push_back(name + " " + std::to_string(p.numel()));
  EXPECT_EQ(names, (std::vector<std::string>{"layers.0.weight 4096", "layers.1.weight 4096", "final.weight 64"}));
  EXPECT_EQ(model.num_parameters(), (D * D) * num_layers + D);
  Tensor y = model.forward(randn({B, D}));
  EXPECT_EQ(y.sizes(), (IntArrayRef{B}));
}

TEST(LectureTraining, NoteAboutRandomness) {
  manual_seed(0);
  Tensor a = randn({4, 4});
  manual_seed(0);
  Tensor b = randn({4, 4});
  EXPECT_TRUE(a.equal(b));
  // Models built from the same seed are identical, parameter for parameter.
  manual_seed(1);
  nn::Cruncher m1(16, 2);
  manual_seed(1);
  nn::Cruncher m2(16, 2);
  for (const auto& [name, p] : m1.state_dict()) EXPECT_TRUE(p.equal(m2.state_dict().at(name))) << name;
}

TEST(LectureTraining, DataLoading) {
  // orig_data = np.array([1, ..., 10], dtype=np.int32); orig_data.tofile("data.npy");
  // data = np.memmap("data.npy", dtype=np.int32)
  const std::string path = std::filesystem::temp_directory_path() / ("tally_lecture_data_" + std::to_string(::getpid()) + ".bin");
  {
    const int32_t orig[] = {1, 2, 3, 4, 5, 6, 7, 8, 9, 10};
    std::ofstream(path, std::ios::binary).write(reinterpret_cast<const char*>(orig), sizeof orig);
  }
  const data::TokenFile data = data::TokenFile::open_raw(path, data::TokenDtype::Int32);
  EXPECT_EQ(data.size(), 10);
  EXPECT_EQ(data.at(9), 10);
  Generator gen(3);
  auto [x, y] = data::get_batch(data, 2, 4, &gen);
  EXPECT_EQ(x.sizes(), (IntArrayRef{2, 4}));
  EXPECT_TRUE((y.narrow(1, 0, 3) == x.narrow(1, 1, 3)).all().item<bool>());  // y is x shifted by one
  EXPECT_TRUE(((y - x) == 1).all().item<bool>());                          // these tokens count up
  std::filesystem::remove(path);
}

TEST(LectureTraining, Optimizer) {
  // optimizer = AdaGrad(model.parameters(), lr=0.01); loss = F.mse_loss(model(x), y);
  // loss.backward(); optimizer.step(); optimizer.zero_grad(set_to_none=True)
  const int64_t B = 2, D = 4, num_layers = 2;
  Generator gen(4);
  nn::Cruncher model(D, num_layers, {}, &gen);
  optim::Adagrad optimizer(model.parameters(), optim::AdagradOptions(0.01));
  Tensor x = randn({B, D}, {}, &gen);
  Tensor y = tensor({4.0, 5.0});
  const Tensor before = model.state_dict().at("final.weight").clone();
  Tensor loss = mse_loss(model.forward(x), y);
  loss.backward();
  optimizer.step();
  optimizer.zero_grad(/*set_to_none=*/true);
  EXPECT_FALSE(model.state_dict().at("final.weight").equal(before));
  for (const Tensor& p : model.parameters()) EXPECT_FALSE(p.grad().defined());
  // One AdaGrad state tensor per parameter, on the books as optimizer state.
  EXPECT_EQ(optimizer.state_dict().contains("state.0.sum"), true);
}

TEST(LectureTraining, TrainLoopLossFalls) {
  // The lecture's train loop: y = x · (0, 1, ..., D−1), a linear model (Cruncher with no hidden
  // layers), SGD. The loss falls; a larger lr falls faster here.
  const int64_t D = 16, B = 4, steps = 20;
  auto train = [&](double lr) {
    Generator gen(5);
    nn::Cruncher model(D, 0, {}, &gen);
    optim::SGD optimizer(model.parameters(), optim::SGDOptions(lr));
    const Tensor true_w = arange(D, TensorOptions(kFloat32));
    std::vector<float> losses;
    for (int64_t t = 0; t < steps; ++t) {
      Tensor x = randn({B, D}, {}, &gen);
      Tensor y = matmul(x, true_w);
      Tensor loss = mse_loss(model.forward(x), y);
      loss.backward();
      optimizer.step();
      optimizer.zero_grad(true);
      losses.push_back(loss.item<float>());
    }
    return losses;
  };
  const std::vector<float> slow = train(0.01), fast = train(0.1);
  EXPECT_LT(slow.back(), slow.front());
  EXPECT_LT(fast.back(), 0.1f * fast.front());
  EXPECT_LT(fast.back(), slow.back());
}

TEST(LectureTraining, MemoryOfACruncherStepIsTheLecturesFormula) {
  // float32: 4 × (parameters + activations + gradients + optimizer state), AdamW keeping 2 state
  // tensors per parameter; activations are the tensors autograd keeps for backward.
  const int64_t D = 128, L = 3, B = 32;
  const int64_t P = D * D * L + D;
  accounting::MemoryTracker tracker;
  Generator gen(6);
  nn::Cruncher model(D, L, {}, &gen);
  optim::AdamW optimizer(model.parameters(), optim::AdamWOptions(1e-3));
  Tensor x = randn({B, D}, {}, &gen), y = randn({B}, {}, &gen);
  const int64_t inputs = live(tracker, MemoryCategory::Other);
  EXPECT_EQ(inputs, kF32 * (B * D + B));
  EXPECT_EQ(live(tracker, MemoryCategory::Parameters), kF32 * P);

  Tensor loss = mse_loss(model.forward(x), y);
  // Kept for backward, and only what the backward rules read (Note [Saved tensors]): each matmul's
  // input for its weight gradient — x [B, D] and h_1..h_L [B, D] — the difference pred − y [B]
  // (square's rule reads it), and the 1/B the mean divides by (a scalar). The final output, y, the
  // square and the loss are not read by any rule, so not kept. Kept inputs move from "other" to
  // activations while the graph holds them (Note [Activations]).
  const int64_t activations = kF32 * (B * D + L * B * D + B + 1);
  EXPECT_EQ(live(tracker, MemoryCategory::Activations), activations);
  loss.backward();
  EXPECT_EQ(live(tracker, MemoryCategory::Activations), 0);  // the graph is released
  EXPECT_EQ(live(tracker, MemoryCategory::Other), inputs + kF32);  // x and y are inputs again; the loss is a value
  EXPECT_EQ(live(tracker, MemoryCategory::Gradients), kF32 * P);
  optimizer.step();
  EXPECT_EQ(live(tracker, MemoryCategory::OptimizerState), kF32 * 2 * P);

  EXPECT_EQ(peak(tracker, MemoryCategory::Parameters), kF32 * P);
  EXPECT_EQ(peak(tracker, MemoryCategory::Activations), activations);
  EXPECT_EQ(peak(tracker, MemoryCategory::Gradients), kF32 * P);
  EXPECT_EQ(peak(tracker, MemoryCategory::OptimizerState), kF32 * 2 * P);
  optimizer.zero_grad(true);
  EXPECT_EQ(live(tracker, MemoryCategory::Gradients), 0);
}

}  // namespace
}  // namespace tally
