// Training-step throughput of tally on the two workloads, for bench/training.sh to set
// beside PyTorch's (bench/train_step.py) in the same run:
//   cruncher  the lecture's Cruncher, D 1024, 4 layers, B 1024, MSE, AdamW, float32
//   gpt       a small GPT: vocab 256, d_model 256, 4 layers, 4 heads, T 256, B 16, AdamW, float32
// in fp32, or in bf16: the forward under amp::AutocastGuard(bfloat16) (float32 master weights).
// Usage: train_step cruncher|gpt [steps] [fp32|bf16] [table|modules|trace]. Prints one JSON line: steps/s, tokens/s, the FLOPs of
// one step read off the ledger, the measured float32 FMA peak, and the process's peak RSS; with "table",
// the ledger's per-op table of one step on stderr first, to see where a step's time goes; with "modules",
// its time and FLOP/s per module path; with "trace", every op of that step as it runs.

#include <sys/resource.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <functional>
#include <optional>
#include <string>

#include "tally/kernels/cpu/parallel.h"
#include "tally/machine/cpu_info.h"
#include "tally/machine/peak_probe.h"
#include "tally/tally.h"

using namespace tally;

namespace {

struct Workload {
  std::function<void()> step;  // forward, backward, optimizer step, zero_grad
  int64_t tokens_per_step;
};

double seconds_since(std::chrono::steady_clock::time_point t0) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
}

}  // namespace

// Prints every op of a step as it runs: phase, module path, op, bytes moved and time.
class TraceOps : public ops::OpObserver {
 public:
  void on_op(std::string_view name, const ops::Cost& cost, double seconds) override {
    std::fprintf(stderr, "%-9s %-24s %-26.*s %10.2f MB %8.3f ms\n", accounting::phase_name(accounting::current_phase()),
                 current_module_path().c_str(), static_cast<int>(name.size()), name.data(),
                 (cost.bytes_read + cost.bytes_written) / 1e6, 1e3 * seconds);
  }
};

int main(int argc, char** argv) {
  const std::string which = argc > 1 ? argv[1] : "cruncher";
  const int steps = argc > 2 ? std::atoi(argv[2]) : 10;
  const std::string precision = argc > 3 ? argv[3] : "fp32";
  const std::string detail = argc > 4 ? argv[4] : "";
  const bool table = detail == "table";
  const bool modules = detail == "modules";
  const bool trace = detail == "trace";
  if (precision != "fp32" && precision != "bf16") {
    std::fprintf(stderr, "train_step: precision must be fp32 or bf16, got %s\n", precision.c_str());
    return 2;
  }
  // The forward under autocast when asked; the backward and the optimizer outside it, as in PyTorch.
  auto forward = [bf16 = precision == "bf16"](const std::function<Tensor()>& f) {
    std::optional<amp::AutocastGuard> autocast;
    if (bf16) autocast.emplace(kBFloat16);
    return f();
  };
  Generator gen(0);
  std::shared_ptr<nn::Layer> model;
  std::unique_ptr<optim::AdamW> optimizer;
  Workload w;
  if (which == "cruncher") {
    const int64_t D = 1024, L = 4, B = 1024;
    model = std::make_shared<nn::Cruncher>(D, L, TensorOptions(), &gen);
    optimizer = std::make_unique<optim::AdamW>(model->parameters(), optim::AdamWOptions(1e-4));
    Tensor x = randn({B, D}, {}, &gen), y = randn({B}, {}, &gen);
    w = {[&, x, y] {
           forward([&] { return mse_loss(model->forward(x), y); }).backward();
           optimizer->step();
           optimizer->zero_grad();
         },
         B};
  } else if (which == "gpt") {
    const nn::TransformerConfig c{.vocab_size = 256, .context_length = 256, .d_model = 256, .num_layers = 4, .num_heads = 4};
    auto lm = std::make_shared<nn::TransformerLM>(c, TensorOptions(), &gen);
    model = lm;
    optimizer = std::make_unique<optim::AdamW>(model->parameters(), optim::AdamWOptions(1e-4));
    Tensor ids = randint(256, {16, 257}, TensorOptions(kInt64), &gen);
    Tensor x = ids.narrow(1, 0, 256).contiguous(), y = ids.narrow(1, 1, 256).contiguous();
    w = {[&, lm, x, y] {
           forward([&] { return lm->loss(x, y); }).backward();
           optimizer->step();
           optimizer->zero_grad();
         },
         16 * 256};
  } else {
    std::fprintf(stderr, "usage: train_step cruncher|gpt [steps]\n");
    return 2;
  }
  w.step();  // warm-up: first-touch pages, oneDNN primitive creation
  int64_t flops = 0;
  {
    accounting::FlopCounter counter;
    TraceOps tracer;
    ops::OpObserver* previous = trace ? ops::set_op_observer(&tracer) : nullptr;
    w.step();
    if (trace) ops::set_op_observer(previous);
    flops = counter.total_flops();
    if (table) std::fprintf(stderr, "%s\n", counter.table().c_str());
    if (modules)
      for (const auto& [key, t] : counter.by_module())
        std::fprintf(stderr, "%-28s %-9s %8.3f ms %8.1f GFLOP/s\n", key.first.c_str(),
                     accounting::phase_name(key.second), 1e3 * t.seconds,
                     t.seconds > 0 ? t.flops / t.seconds / 1e9 : 0.0);
  }
  const auto t0 = std::chrono::steady_clock::now();
  for (int i = 0; i < steps; ++i) w.step();
  const double s = seconds_since(t0) / steps;
  const double peak = machine::measure_fma_peak_flops(kernels::num_threads(), 0.3);
  // The bfloat16 peak this CPU has, 0 without native bfloat16: AMX tiles, else vdpbf16ps.
  const auto& cpu = machine::cpu_info();
  const double bf16_peak = cpu.amx_bf16      ? machine::measure_amx_bf16_peak_flops(kernels::num_threads(), 0.3)
                           : cpu.avx512_bf16 ? machine::measure_bf16_dot_peak_flops(kernels::num_threads(), 0.3)
                                             : 0.0;
  rusage ru{};
  getrusage(RUSAGE_SELF, &ru);
  std::printf("{\"framework\": \"tally\", \"workload\": \"%s\", \"precision\": \"%s\", \"threads\": %d, \"steps_per_sec\": %.4f, \"tokens_per_sec\": %.1f, "
              "\"flops_per_step\": %lld, \"flops_per_sec\": %.4g, \"fma_peak_flops\": %.4g, \"bf16_peak_flops\": %.4g, \"peak_rss_mib\": %.1f}\n",
              which.c_str(), precision.c_str(), kernels::num_threads(), 1.0 / s, static_cast<double>(w.tokens_per_step) / s, static_cast<long long>(flops),
              static_cast<double>(flops) / s, peak, bf16_peak, static_cast<double>(ru.ru_maxrss) / 1024.0);
}
