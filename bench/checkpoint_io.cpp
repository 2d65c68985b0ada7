// Checkpoint save and load of the small GPT (bench/train_step.cpp's: d_model 256, 4 layers, with
// its AdamW state), timed against nothing but the clock: bench/checkpoint.sh measures the disk's
// own write and read bandwidth in the same folder and the same run, and prints the ratios.
// Usage: checkpoint_io DIR [repeats]. Prints one JSON line.

#include <chrono>
#include <cstdio>
#include <filesystem>
#include <string>

#include "tally/io/safetensors.h"
#include "tally/tally.h"
#include "tally/train/checkpoint.h"

using namespace tally;

int main(int argc, char** argv) {
  if (argc < 2) {
    std::fprintf(stderr, "usage: checkpoint_io DIR [repeats]\n");
    return 2;
  }
  const std::filesystem::path dir = argv[1];
  const int repeats = argc > 2 ? std::atoi(argv[2]) : 5;
  const nn::TransformerConfig c{.vocab_size = 256, .context_length = 256, .d_model = 256, .num_layers = 4, .num_heads = 4};
  Generator gen(0);
  nn::TransformerLM model(c, {}, &gen);
  optim::AdamW optimizer(model.parameters(), optim::AdamWOptions(1e-3));
  const Tensor ids = zeros({2, c.context_length}, kInt64);
  model.loss(ids, ids).backward();
  optimizer.step();  // AdamW's state exists after the first step
  StateDict all;
  for (const auto& [k, t] : model.state_dict()) all.insert("model." + k, t);
  for (const auto& [k, t] : optimizer.state_dict()) all.insert("optimizer." + k, t);
  int64_t bytes = 0;
  for (const auto& [k, t] : all) bytes += t.nbytes();

  const train::CheckpointManager manager(dir, 1);
  double best_save = 1e30, best_load = 1e30;
  for (int r = 0; r < repeats; ++r) {
    auto t0 = std::chrono::steady_clock::now();
    const auto path = manager.save(r, all, {{"step", std::to_string(r)}});
    const double save_s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    t0 = std::chrono::steady_clock::now();
    const StateDict loaded = io::SafetensorsReader::open(path).load_all();
    const double load_s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    if (loaded.size() != all.size()) return 1;
    best_save = std::min(best_save, save_s);
    best_load = std::min(best_load, load_s);
  }
  std::filesystem::remove_all(dir);
  std::printf("{\"tensors\": %zu, \"bytes\": %lld, \"save_s\": %.6f, \"load_s\": %.6f, \"save_bytes_per_s\": %.6g, \"load_bytes_per_s\": %.6g}\n",
              all.size(), static_cast<long long>(bytes), best_save, best_load, static_cast<double>(bytes) / best_save,
              static_cast<double>(bytes) / best_load);
  return 0;
}
