// Checkpoint save and load of the small GPT (bench/train_step.cpp's: d_model 256, 4 layers, with
// its AdamW state), timed against nothing but the clock: bench/checkpoint.sh measures the disk's
// own write and read bandwidth in the same folder and the same run, and prints the ratios. Each
// repeat saves and loads the same tensors twice, with checksums (computed while writing, verified
// while reading: Note [Checksums] in tally/io/checksum.cpp) and without, so that what the checksums
// cost is measured in the same run (medians; best times for the disk comparison). Usage: checkpoint_io DIR [repeats]. Prints one JSON line.

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <filesystem>
#include <string>
#include <vector>

#include "tally/io/checksum.h"
#include "tally/io/safetensors.h"
#include "tally/tally.h"

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

  std::filesystem::create_directories(dir);
  const std::filesystem::path path = dir / "step.safetensors";
  const auto seconds_of = [](auto&& fn) {
    const auto t0 = std::chrono::steady_clock::now();
    fn();
    return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  };
  // Each save and load, with checksums ([1]) and without ([0]), alternated, `repeats` times: the
  // best time against the disk (checkpoint.sh), the medians for what checksums cost (a save's
  // fsync varies by more than the checksums cost it, and a best-of picks a lucky fsync).
  std::vector<double> saves[2], loads[2], hashes;
  for (int r = 0; r < repeats; ++r) {
    // The checksums alone, as the writer computes them: what they add to a save's CPU time.
    hashes.push_back(seconds_of([&] {
      for (const auto& [name, t] : all) {
        io::Checksum sum = io::tensor_checksum(io::safetensors_dtype_name(t.dtype()), std::span(t.sizes().data(), t.sizes().size()));
        sum.update(std::span(static_cast<const uint8_t*>(t.data_ptr()), static_cast<size_t>(t.nbytes())));
        if (sum.digest() == 0) std::printf(" ");  // keeps the hash from being optimised away
      }
    }));
    for (const bool checksums : {false, true}) {
      saves[checksums].push_back(seconds_of([&] { io::save_safetensors(path, all, {{"step", std::to_string(r)}}, checksums); }));
      size_t loaded = 0;
      loads[checksums].push_back(seconds_of([&] { loaded = io::SafetensorsReader::open(path).load_all(checksums).size(); }));
      if (loaded != all.size()) return 1;
    }
  }
  std::filesystem::remove_all(dir);
  const auto best = [](std::vector<double> v) { return *std::min_element(v.begin(), v.end()); };
  const auto median = [](std::vector<double> v) {
    std::sort(v.begin(), v.end());
    return v.size() % 2 ? v[v.size() / 2] : (v[v.size() / 2 - 1] + v[v.size() / 2]) / 2;
  };
  const double best_save[2] = {best(saves[0]), best(saves[1])}, best_load[2] = {best(loads[0]), best(loads[1])};
  const double median_save[2] = {median(saves[0]), median(saves[1])}, median_load[2] = {median(loads[0]), median(loads[1])};
  const double b = static_cast<double>(bytes);
  std::printf("{\"tensors\": %zu, \"bytes\": %lld, \"save_s\": %.6f, \"load_s\": %.6f, \"save_bytes_per_s\": %.6g, "
              "\"load_bytes_per_s\": %.6g, \"save_median_s\": %.6f, \"save_unchecked_median_s\": %.6f, \"load_median_s\": %.6f, "
              "\"load_unchecked_median_s\": %.6f, \"save_checksum_cost\": %.4f, \"load_checksum_cost\": %.4f, \"hash_median_s\": %.6f}\n",
              all.size(), static_cast<long long>(bytes), best_save[1], best_load[1], b / best_save[1], b / best_load[1], median_save[1],
              median_save[0], median_load[1], median_load[0], median_save[1] / median_save[0] - 1, median_load[1] / median_load[0] - 1,
              median(hashes));
  return 0;
}
