// Decoding throughput of nn::TransformerLM::generate with its KV cache, for bench/decode.sh to set
// beside PyTorch's (bench/decode.py, the same model with a KV cache of its own) in the same run:
//   small  vocab 256, d_model 256, 4 layers, 4 heads, context 256 (the training benchmark's GPT)
//   gpt2   GPT-2 small's shape: vocab 50257, d_model 768, 12 layers, 12 heads, context 1024
// float32, random weights, a prompt of 16 random tokens, greedy decoding. Usage:
// decode small|gpt2 BATCH NEW_TOKENS [table]. Prints one JSON line: decode tokens/s (the tokens
// after the prefill over their time), the weights' bytes and the measured read bandwidth, so the
// weights' bound (bandwidth / weight bytes, steps per second) is computed in the same run; with
// "table", the ledger of the decode steps on stderr.

#include <chrono>
#include <cstdio>
#include <string>

#include "tally/kernels/cpu/parallel.h"
#include "tally/machine/peak_probe.h"
#include "tally/tally.h"

using namespace tally;

int main(int argc, char** argv) {
  if (argc < 4) {
    std::fprintf(stderr, "usage: decode small|gpt2 BATCH NEW_TOKENS [table]\n");
    return 2;
  }
  const std::string shape = argv[1];
  const int64_t batch = std::stoll(argv[2]), new_tokens = std::stoll(argv[3]);
  const bool table = argc > 4 && std::string(argv[4]) == "table";
  nn::TransformerConfig c;
  if (shape == "gpt2") {
    c.vocab_size = 50257, c.context_length = 1024, c.d_model = 768, c.num_layers = 12, c.num_heads = 12;
  } else {
    c.vocab_size = 256, c.context_length = 256, c.d_model = 256, c.num_layers = 4, c.num_heads = 4;
  }
  Generator gen(0);
  nn::TransformerLM model(c, {}, &gen);
  const Tensor prompt = randint(c.vocab_size, {batch, 16}, {}, &gen);
  nn::GenerationOptions o;
  o.max_new_tokens = new_tokens;
  o.sampling.temperature = 0;
  model.generate(prompt, o);  // warm-up: the allocator's cache, oneDNN's primitives
  using Clock = std::chrono::steady_clock;
  Clock::time_point t0, t1;
  std::optional<accounting::FlopCounter> counter;
  o.on_token = [&](int64_t i, const Tensor&) {
    if (i == 0) {
      t0 = Clock::now();
      if (table) counter.emplace();
    }
  };
  model.generate(prompt, o);
  t1 = Clock::now();
  if (counter) std::fprintf(stderr, "%s\n", counter->table().c_str());
  const double seconds = std::chrono::duration<double>(t1 - t0).count();
  int64_t weight_bytes = 0;
  for (const Tensor& p : model.parameters()) weight_bytes += p.nbytes();
  const double bandwidth = machine::measure_stream(int64_t{256} << 20, kernels::num_threads(), 3).read_bytes_per_sec;
  std::printf("{\"framework\": \"tally\", \"shape\": \"%s\", \"batch\": %lld, \"threads\": %d, \"decode_tokens_per_sec\": %.2f, "
              "\"weight_bytes\": %lld, \"read_bytes_per_sec\": %.4g}\n",
              shape.c_str(), static_cast<long long>(batch), kernels::num_threads(),
              static_cast<double>(batch * (new_tokens - 1)) / seconds, static_cast<long long>(weight_bytes), bandwidth);
  return 0;
}
