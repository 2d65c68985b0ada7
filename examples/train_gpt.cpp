// A small GPT trained on a token file it writes itself, read top to bottom: the data (a
// deterministic byte stream with structure to learn), the model, AdamW with warmup + cosine, the
// loop, and then the step's accounting — FLOPs per step from the ledger, MFU against the measured
// float32 peak, and memory by category.
//
//   build/examples/train_gpt [steps]

#include <fmt/core.h>

#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <optional>
#include <string>

#include "tally/kernels/cpu/parallel.h"
#include "tally/machine/peak_probe.h"
#include "tally/tally.h"

using namespace tally;

namespace {

/// Bytes of a repeating, slightly varied text: a model that learns it gets far below the unigram
/// entropy of its bytes.
std::string corpus(int64_t n) {
  static const char* kWords[] = {"the ", "cat ", "sat ", "on ", "a ", "mat ", "and ", "dog ", "ran ", "to ", "it. "};
  std::string s;
  uint64_t state = 12345;
  while (static_cast<int64_t>(s.size()) < n) {
    state = state * 6364136223846793005ULL + 1442695040888963407ULL;
    s += kWords[(state >> 33) % 11];
  }
  s.resize(static_cast<size_t>(n));
  return s;
}

}  // namespace

int main(int argc, char** argv) {
  const int64_t steps = argc > 1 ? std::atoll(argv[1]) : 60;
  // 1. Data: write the corpus as uint16 tokens, as numpy's tofile would, and map it.
  const std::filesystem::path path = std::filesystem::temp_directory_path() / "tally_train_gpt_tokens.bin";
  {
    const std::string text = corpus(1 << 18);
    std::vector<uint16_t> tokens(text.begin(), text.end());
    std::ofstream(path, std::ios::binary).write(reinterpret_cast<const char*>(tokens.data()),
                                                static_cast<std::streamsize>(tokens.size() * sizeof(uint16_t)));
  }
  const data::TokenFile tokens = data::TokenFile::open_raw(path.string(), data::TokenDtype::UInt16);

  // 2. Model: a byte-level GPT (vocab 256).
  const nn::TransformerConfig config{.vocab_size = 256, .context_length = 64, .d_model = 128, .num_layers = 2, .num_heads = 4};
  const int64_t batch = 16;
  Generator gen(0);
  nn::TransformerLM model(config, {}, &gen);
  fmt::print("model: {} parameters\n", model.num_parameters());

  // 3. Optimizer and schedule.
  optim::AdamW optimizer(model.parameters(), optim::AdamWOptions(3e-3).weight_decay(0.1));
  optim::WarmupCosineLR schedule(optimizer, steps / 10, steps, 3e-4);

  // 4. The loop; the last step is measured.
  data::TokenLoader loader(tokens, {.batch_size = batch, .context_length = config.context_length, .seed = 1, .vocab_size = 256});
  accounting::MemoryTracker tracker;
  double seconds = 0;
  int64_t step_flops = 0;
  for (int64_t t = 0; t < steps; ++t) {
    auto [x, y] = loader.next();
    const bool last = t == steps - 1;
    std::optional<accounting::FlopCounter> counter;
    if (last) counter.emplace();
    const auto start = std::chrono::steady_clock::now();
    Tensor loss = model.loss(x, y);
    loss.backward();
    optimizer.step();
    optimizer.zero_grad();
    schedule.step();
    seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    if (last) step_flops = counter->total_flops();
    if (t % 10 == 0 || last) fmt::print("step {:4d}  loss {:.4f}  lr {:.2e}\n", t, loss.item<float>(), schedule.get_last_lr()[0]);
  }
  std::filesystem::remove(path);

  // 5. The books for one step.
  const double peak = machine::measure_fma_peak_flops(kernels::num_threads(), 0.2);
  fmt::print("\nOne step ({} tokens): {:.3f} GFLOP on the ledger, {:.1f} ms, {:.1f} GFLOP/s = {:.1f}% of the measured float32 FMA peak "
             "({:.1f} GFLOP/s)\n",
             batch * config.context_length, static_cast<double>(step_flops) / 1e9, seconds * 1e3, step_flops / seconds / 1e9,
             100.0 * step_flops / seconds / peak, peak / 1e9);
  fmt::print("{}", tracker.report());
}
