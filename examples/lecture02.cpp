// Lecture 2, "PyTorch, resource accounting", told by tally. Read it top to bottom: each section
// builds tensors the way the lecture does and prints what tally measures about them — sizes,
// strides, bytes, which tensors share storage; for a matmul its FLOPs (read off the ledger), time,
// FLOP/s and MFU; for backward the 2 : 4 : 6 rule; and the lecture's napkin math.

#include <fmt/core.h>

#include <chrono>

#include "tally/machine/cpu_info.h"
#include "tally/accounting/estimate.h"
#include "tally/machine/peak_probe.h"
#include "tally/tally.h"

using namespace tally;
using namespace tally::indexing;
using accounting::format_bytes;

namespace {

std::string shape(const Tensor& t) {
  std::string s = "[";
  for (int64_t i = 0; i < t.dim(); ++i) s += (i ? ", " : "") + std::to_string(t.size(i));
  return s + "]";
}

void section(const char* name) { fmt::print("\n=== {} ===\n", name); }

void tensors_basics() {
  section("tensors_basics");
  Tensor x = tensor({{1., 2, 3}, {4, 5, 6}});
  fmt::print("x = tensor({{{{1., 2, 3}}, {{4, 5, 6}}}}) ->\n{}\n", x.to_string());
  fmt::print("zeros({{4, 8}}) sum = {}, ones({{4, 8}}) sum = {}\n", zeros({4, 8}).sum().item<float>(), ones({4, 8}).sum().item<float>());
  manual_seed(0);
  Tensor r = randn({4, 8});
  fmt::print("randn({{4, 8}}): mean {:.3f}, var {:.3f} (32 samples of N(0, 1))\n", r.mean().item<float>(), r.var().item<float>());
  Tensor w = empty({256, 64});
  nn::init::trunc_normal_(w, 0.0, 1.0 / 16, -3, 3);
  fmt::print("trunc_normal_(std=1/sqrt(256), a=-3, b=3): min {:.3f}, max {:.3f}\n", w.min().item<float>(), w.max().item<float>());
}

void tensors_memory() {
  section("tensors_memory");
  for (Dtype dt : {kFloat32, kFloat16, kBFloat16, kFloat8_e4m3fn, kFloat8_e5m2}) {
    Tensor x = zeros({4, 8}, dt);
    const FInfo f = finfo(dt);
    fmt::print("{:<14} element_size {}  memory_usage(4x8) = {:>4} bytes  max {:<12g} eps {:<10g} tiny {:g}\n",
               dtype_name(dt), x.element_size(), memory_usage(x), f.max, f.eps, f.tiny);
  }
  fmt::print("float16 1e-8 -> {}   (underflow)\n", tensor({1e-8}, kFloat16).item<float>());
  fmt::print("bfloat16 1e-8 -> {:g} (float32's range, coarser steps)\n", tensor({1e-8}, kBFloat16).item<float>());
  fmt::print("float8_e4m3fn: 448 -> {}, 500 -> {} (no infinity), saturating 500 -> {}\n",
             static_cast<float>(Float8_e4m3fn(448.f)), static_cast<float>(Float8_e4m3fn(500.f)),
             static_cast<float>(Float8_e4m3fn::saturate(500.f)));

  accounting::MemoryTracker tracker;
  Tensor big = empty({12288 * 4, 12288});
  fmt::print("GPT-3 feedforward matrix empty({{12288 * 4, 12288}}): memory_usage = {} MiB, tracker sees +{} MiB\n",
             memory_usage(big) >> 20, tracker.allocated_since_start() >> 20);
  fmt::print("its pages are not touched until written: reserved bytes {} are address space, not RAM\n",
             format_bytes(tracker.reserved_bytes()));
}

void tensors_on_gpu() {
  section("tensors_on_gpu");
  if (!cuda::is_available()) {
    fmt::print("no GPU here ({}): tensors stay on the CPU; on a GPU machine this section moves them there\n",
               cuda::device_count() == 0 ? "no CUDA device, or tally built without CUDA" : "CUDA unavailable");
    return;
  }
  fmt::print("{} GPU(s); cuda:0 is {}\n", cuda::device_count(), cuda::get_device_properties(0).name);
  const int64_t before = cuda::memory_allocated();
  Tensor x = zeros({32, 32});
  Tensor y = x.to(Device("cuda:0"));
  Tensor z = zeros({32, 32}, Device("cuda:0"));
  fmt::print("x on {}, y = x.to(\"cuda:0\") on {}, z on {}\n", x.device().str(), y.device().str(), z.device().str());
  fmt::print("memory_allocated grew by {} bytes = 2 x 32 x 32 x 4\n", cuda::memory_allocated() - before);
}

void tensor_storage() {
  section("tensor_storage");
  Tensor x = arange(16, kFloat32).view({4, 4});
  fmt::print("x = arange(16).view({{4, 4}}): strides ({}, {})\n", x.stride(0), x.stride(1));
  const int64_t r = 1, c = 2, index = r * x.stride(0) + c * x.stride(1);
  fmt::print("element [1, 2] lives at storage index 1*{} + 2*{} = {} and holds {}\n", x.stride(0), x.stride(1), index,
             x.data_ptr<float>()[index]);
}

void tensor_slicing() {
  section("tensor_slicing");
  Tensor x = tensor({{1., 2, 3}, {4, 5, 6}});
  accounting::MemoryTracker tracker;
  struct V { const char* what; Tensor t; };
  for (const V& v : {V{"x[0]", x.index({0})}, V{"x[:, 1]", x.index({Slice(), 1})}, V{"x.view(3, 2)", x.view({3, 2})},
                     V{"x.transpose(1, 0)", x.transpose(1, 0)}}) {
    fmt::print("{:<18} shape {:<7} strides ({}) offset {}  shares x's storage: {}  contiguous: {}\n", v.what, shape(v.t),
               [&] { std::string s; for (int64_t i = 0; i < v.t.dim(); ++i) s += (i ? ", " : "") + std::to_string(v.t.stride(i)); return s; }(),
               v.t.storage_offset(), v.t.is_same_storage(x), v.t.is_contiguous());
  }
  fmt::print("bytes allocated by those four views: {}\n", tracker.allocated_since_start());
  Tensor y = x.transpose(1, 0);
  x.index_put_({0, 0}, 100);
  fmt::print("after x[0][0] = 100, y[0][0] = {}\n", y.index({0, 0}).item<float>());
  try {
    y.view({2, 3});
  } catch (const Error& e) {
    fmt::print("y.view(2, 3) raises: {}\n", e.what());
  }
  Tensor z = y.contiguous();
  fmt::print("y.contiguous() copies: shares storage {}, +{} bytes allocated\n", z.is_same_storage(x), tracker.allocated_since_start());
}

void tensor_elementwise() {
  section("tensor_elementwise");
  Tensor x = tensor({1, 4, 9});
  fmt::print("x.pow(2) = {}\nx.sqrt() = {}\nx.rsqrt() = {}\nx * 2 = {}\nx / 0.5 = {}\n", x.pow(2).to_string(),
             x.sqrt().to_string(), x.rsqrt().to_string(), (x * 2).to_string(), (x / 0.5).to_string());
  fmt::print("ones({{3, 3}}).triu() =\n{}\n", ones({3, 3}).triu().to_string());
}

void tensor_matmul() {
  section("tensor_matmul");
  Tensor x = ones({4, 8, 16, 32}), w = ones({32, 2});
  fmt::print("(4, 8, 16, 32) @ (32, 2) -> {}\n", shape(matmul(x, w)));
  const auto& cpu = machine::cpu_info();
  const double peak = machine::promised_cpu_peaks(cpu).front().flops_per_sec;
  // The lecture's linear model: B data points of dimension D mapped to K outputs costs 2·B·D·K
  // FLOPs. The figure below is what the ledger recorded for the calls that ran, not that formula.
  for (auto [B, D, K] : {std::tuple<int64_t, int64_t, int64_t>{1024, 256, 64}, {1024, 1024, 1024}, {2048, 2048, 2048}}) {
    Tensor a = randn({B, D}), b = randn({D, K});
    Tensor out = matmul(a, b);  // warm-up: creates and caches the oneDNN primitive
    const int reps = 5;
    accounting::FlopCounter counter;
    auto start = std::chrono::steady_clock::now();
    for (int i = 0; i < reps; ++i) out = matmul(a, b);
    const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count() / reps;
    const double flops = static_cast<double>(counter.total_flops()) / reps;
    fmt::print("({} x {}) @ ({} x {}): {:.3g} FLOPs (2·B·D·K = {:.3g}) in {:.3f} ms = {:.1f} GFLOP/s, MFU {:.0f}% of the promised float32 {:.0f} GFLOP/s\n",
               B, D, D, K, flops, 2.0 * B * D * K, seconds * 1e3, flops / seconds / 1e9, 100 * flops / seconds / peak,
               peak / 1e9);
  }
}

void gradients_basics() {
  section("gradients_basics");
  Tensor x = tensor({1., 2, 3});
  Tensor w = tensor({1., 1, 1}).requires_grad_();
  Tensor pred_y = x.matmul(w);
  Tensor loss = 0.5 * (pred_y - 5).pow(2);
  fmt::print("pred_y = x @ w = {}, loss = 0.5 (pred_y - 5)^2 = {}, loss.grad_fn = {}\n", pred_y.item<float>(),
             loss.item<float>(), loss.grad_fn()->name());
  loss.backward();
  fmt::print("after loss.backward(): w.grad = {}\n", w.grad().to_string());
  fmt::print("loss.grad, pred_y.grad, x.grad defined: {}, {}, {} (only leaves that require grad get one)\n",
             loss.grad().defined(), pred_y.grad().defined(), x.grad().defined());
}

void gradients_flops() {
  section("gradients_flops");
  // x (B×D) → w1 (D×D) → w2 (D×K) → pow(2).mean(): the ledger counts forward and backward.
  const int64_t B = 1024, D = 256, K = 64;
  for (bool x_requires_grad : {false, true}) {
    Tensor x = ones({B, D});
    if (x_requires_grad) x.requires_grad_();
    Tensor w1 = randn({D, D}).requires_grad_(), w2 = randn({D, K}).requires_grad_();
    accounting::FlopCounter counter;
    Tensor loss = matmul(matmul(x, w1), w2).pow(2).mean();
    loss.backward();
    const auto fwd = counter.op("matmul", accounting::Phase::Forward).flops;
    const auto bwd = counter.op("matmul", accounting::Phase::Backward).flops;
    fmt::print("x.requires_grad={}: matmul FLOPs forward {} (2·B·D·D + 2·B·D·K = {}), backward {} ({} = {}), ratio {:.2f}\n",
               x_requires_grad, fwd, 2 * B * D * D + 2 * B * D * K, bwd,
               x_requires_grad ? "4·B·D·D + 4·B·D·K" : "2·B·D·D + 4·B·D·K",
               x_requires_grad ? 4 * B * D * D + 4 * B * D * K : 2 * B * D * D + 4 * B * D * K,
               static_cast<double>(bwd) / static_cast<double>(fwd));
    if (x_requires_grad) {
      // Roofs: the promised float32 peak and a quick triad bandwidth (3 x 64 MiB arrays, beyond L3).
      const double peak = machine::promised_cpu_peaks(machine::cpu_info()).front().flops_per_sec;
      const accounting::Roofline roof{peak, machine::measure_stream_triad_bytes_per_sec(int64_t{64} << 20, 2)};
      fmt::print("the whole ledger, against a roofline of {:.0f} GFLOP/s and {:.1f} GB/s (ridge {:.1f} FLOP/byte):\n{}",
                 peak / 1e9, roof.bytes_per_sec / 1e9, roof.ridge_point(), counter.table(roof));
    }
  }
  if (!cuda::is_available()) return;
  // The same on the GPU: the same formulas give the FLOPs; CUDA events time the ops.
  const Device gpu("cuda:0");
  const TensorOptions on_gpu = TensorOptions().device(gpu);
  Tensor x = ones({B, D}, on_gpu).requires_grad_();
  Tensor w1 = randn({D, D}, on_gpu).requires_grad_(), w2 = randn({D, K}, on_gpu).requires_grad_();
  const auto forward_backward = [&] { matmul(matmul(x, w1), w2).pow(2).mean().backward(); };
  // One pass untimed: the first product of each layout sets cuBLASLt up (its handle, a heuristic
  // query), host work that the events of the first pass would count as the op's time.
  forward_backward();
  accounting::FlopCounter counter;
  forward_backward();
  const auto fwd = counter.op("matmul", accounting::Phase::Forward), bwd = counter.op("matmul", accounting::Phase::Backward);
  fmt::print("on {}: matmul forward {} FLOPs in {:.3f} ms, backward {} FLOPs in {:.3f} ms (CUDA events), ratio {:.2f}\n",
             gpu.str(), fwd.flops, fwd.seconds * 1e3, bwd.flops, bwd.seconds * 1e3,
             static_cast<double>(bwd.flops) / static_cast<double>(fwd.flops));
}

void napkin_math() {
  section("napkin_math");
  using namespace accounting;
  const TrainTime t = train_time(70e9, 15e12, machine::promised_peak(machine::device_spec("h100")), 1024, 0.5);
  fmt::print("70B parameters on 15T tokens, 1024 H100 at MFU 0.5: {} = {:.4g} FLOPs -> {:.1f} days\n",
             t.total_flops.formula, t.total_flops.value, t.days.value);
  const MaxParams m = max_params(machine::device_spec("h100").memory_bytes, 8, recipe("fp32-adamw"));
  fmt::print("largest model 8 H100 train with float32 AdamW ({} bytes/param): {:.3g} parameters ({})\n",
             m.recipe.bytes_per_param(), m.max_params.value, m.not_included);
  const TensorBytes g = tensor_bytes({12288 * 4, 12288}, kFloat32);
  fmt::print("a 4·12288 x 12288 float32 matrix: {} = {:.0f} bytes = {:.0f} MiB\n", g.bytes.formula, g.bytes.value,
             g.bytes.value / (1 << 20));
}

}  // namespace

int main() {
  fmt::print("tally — lecture 2, resource accounting, measured on this machine\n");
  tensors_basics();
  tensors_memory();
  tensors_on_gpu();
  tensor_storage();
  tensor_slicing();
  tensor_elementwise();
  tensor_matmul();
  gradients_basics();
  gradients_flops();
  napkin_math();
  return 0;
}
