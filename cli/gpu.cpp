// The GPU side of `tally info` and `tally bench`: what the GPU is and promises, its measured
// matmul peak per dtype and HBM bandwidth (`bench peak --device cuda`, stored next to the CPU's),
// and the lecture's time_matmul on it (`bench matmul --device cuda`), timed with CUDA events.

#include <fmt/core.h>

#include <algorithm>
#include <cstdlib>
#include <fstream>
#include <functional>
#include <nlohmann/json.hpp>
#include <optional>
#include <vector>

#include "cli/gpu.h"
#include "tally/machine/cache_dir.h"
#include "tally/machine/device_specs.h"
#include "tally/tally.h"

namespace tally::cli {

namespace {

namespace fs = std::filesystem;

/// The dtypes a GPU matmul is measured in, with the name of the datasheet peak each is held to.
struct GpuDtype {
  const char* name;       ///< as --dtype takes it
  const char* peak_name;  ///< in the device table
};
const std::vector<GpuDtype>& gpu_dtypes() {
  static const std::vector<GpuDtype> d = {{"bfloat16", "bfloat16"}, {"float16", "float16"}, {"float8", "float8"},
                                          {"tf32", "tf32"},         {"float32", "float32"}};
  return d;
}

fs::path gpu_peaks_path() {
  if (const char* x = std::getenv("TALLY_GPU_PEAKS_FILE")) return x;
  return machine::cache_dir() / "gpu_peaks.json";
}

void require_gpu(const Device& device) {
  TALLY_CHECK_TYPE(DeviceError, cuda::is_available(),
                   "no CUDA GPU: this tally was built without CUDA or the machine has none (cuda::device_count() = ",
                   cuda::device_count(), ")");
  TALLY_CHECK_TYPE(DeviceError, device.index() < cuda::device_count(), "no ", device.str(), ": this machine has ",
                   cuda::device_count(), " GPU(s)");
}

/// One (m×k)·(k×n) product in `dtype` on `device`, as a callable; float8 goes through scaled_mm
/// (e4m3, B column-major as the FP8 tensor cores read it) and tf32 is float32 with TF32 allowed.
std::function<void()> matmul_call(const std::string& dtype, int64_t m, int64_t n, int64_t k, const Device& device,
                                  std::vector<Tensor>& keep) {
  const TensorOptions on(device);
  if (dtype == "float8") {
    Tensor a = randn({m, k}, on).to(kFloat8_e4m3fn), w = randn({n, k}, on).to(kFloat8_e4m3fn);
    Tensor one = ones({}, on);
    keep = {a, w, one};
    return [a, w, one] { scaled_mm(a, w.t(), one, one, kBFloat16); };
  }
  const Dtype dt = dtype == "tf32" ? kFloat32 : dtype_from_name(dtype);
  Tensor a = randn({m, k}, on).to(dt), b = randn({k, n}, on).to(dt);
  keep = {a, b};
  return [a, b] { matmul(a, b); };
}

struct TfGuard {  // TF32 on for the "tf32" dtype only, restored afterwards
  bool previous = cuda::allow_tf32();
  explicit TfGuard(bool on) { cuda::set_allow_tf32(on); }
  ~TfGuard() { cuda::set_allow_tf32(previous); }
};

}  // namespace

void print_gpu_info() {
  if (!cuda::is_available()) {
    fmt::print("\nGPU\n  none: {}\n", cuda::is_built() ? "this tally is built with CUDA, but no CUDA device was found (no GPU, or "
                                                           "no driver for it)"
                                                         : "this tally was built without CUDA (no CUDA toolkit when it was "
                                                           "configured; -DTALLY_CUDA=ON requires one)");
    return;
  }
  for (int d = 0; d < cuda::device_count(); ++d) {
    const cuda::DeviceProperties p = cuda::get_device_properties(d);
    fmt::print("\nGPU cuda:{}\n", d);
    fmt::print("  model            {} (compute capability {}.{})\n", p.name, p.major, p.minor);
    fmt::print("  multiprocessors  {}\n", p.multiprocessors);
    fmt::print("  memory           {:.1f} GiB, {}-bit bus; L2 {:.0f} MiB\n", p.total_memory / double(1 << 30), p.memory_bus_bits,
               p.l2_cache_bytes / double(1 << 20));
    fmt::print("  clocks           SM {:.2f} GHz, memory {:.2f} GHz (driver's maxima)\n", p.sm_clock_ghz, p.memory_clock_ghz);
    fmt::print("  matmul           cuBLASLt: float32 (TF32 {}), bfloat16, float16, float8 e4m3/e5m2 with scales\n",
               cuda::allow_tf32() ? "on" : "off, cuda::set_allow_tf32");
    if (const machine::DeviceSpec* spec = machine::device_spec_for_gpu(p.name)) {
      fmt::print("  promised (dense; {})\n", spec->source);
      for (const auto& peak : spec->peaks)
        if (!peak.sparse) fmt::print("    {:<9} {:>9.1f} TFLOP/s\n", peak.dtype, peak.flops_per_sec / 1e12);
      if (spec->memory_bytes_per_sec) fmt::print("    memory    {:>9.2f} TB/s\n", *spec->memory_bytes_per_sec / 1e12);
    } else {
      fmt::print("  promised         not in tally's device table: MFU is quoted against the measured peak only\n");
    }
  }
}

namespace {

/// Measured peaks of one GPU: TFLOP/s per dtype (8192³ products) and copy bandwidth.
nlohmann::json measure_gpu(const Device& device) {
  const int dev = device.index();
  const cuda::DeviceProperties p = cuda::get_device_properties(dev);
  nlohmann::json j{{"gpu", p.name}};
  const int64_t s = 8192;
  for (const GpuDtype& d : gpu_dtypes()) {
    std::vector<Tensor> keep;
    try {
      TfGuard tf(std::string(d.name) == "tf32");
      auto fn = matmul_call(d.name, s, s, s, device, keep);
      const double secs = cuda::time_per_call(dev, fn, std::string(d.name) == "float32" ? 2 : 10);
      j["flops_per_sec"][d.peak_name] = 2.0 * s * s * s / secs;
    } catch (const Error& e) {
      fmt::print("  {}: not measured ({})\n", d.name, e.what());
    }
  }
  {
    NoGradGuard no_grad;
    const int64_t n = int64_t{1} << 28;  // 1 GiB of float32
    Tensor x = empty({n}, device), y = empty({n}, device);
    x.fill_(1);
    const double secs = cuda::time_per_call(dev, [&] { y.copy_(x); }, 10);
    j["copy_bytes_per_sec"] = 2.0 * n * 4 / secs;  // read + written
  }
  cuda::empty_cache();
  j["measured_at"] = machine::utc_timestamp();
  return j;
}

std::optional<nlohmann::json> load_gpu_peaks(const std::string& gpu) {
  std::ifstream in(gpu_peaks_path());
  if (!in) return std::nullopt;
  try {
    nlohmann::json all = nlohmann::json::parse(in);
    if (all.contains(gpu)) return all.at(gpu);
  } catch (const std::exception&) {
  }
  return std::nullopt;  // unreadable or measured on another GPU: measure again
}

void save_gpu_peaks(const nlohmann::json& peaks) {
  nlohmann::json all = nlohmann::json::object();
  if (std::ifstream in(gpu_peaks_path()); in) {
    try { all = nlohmann::json::parse(in); } catch (const std::exception&) { all = nlohmann::json::object(); }
  }
  all[peaks.at("gpu").get<std::string>()] = peaks;
  machine::write_cache_file(gpu_peaks_path(), all.dump(2) + "\n");
}

double promised_gpu(const std::string& gpu, const std::string& dtype) {
  const machine::DeviceSpec* spec = machine::device_spec_for_gpu(gpu);
  if (!spec) return 0;
  for (const auto& p : spec->peaks)
    if (!p.sparse && p.dtype == dtype) return p.flops_per_sec;
  return 0;
}

}  // namespace

void run_gpu_peak(const Device& device) {
  require_gpu(device);
  const cuda::DeviceProperties p = cuda::get_device_properties(device.index());
  fmt::print("measuring {} ({})...\n", p.name, device.str());
  const nlohmann::json j = measure_gpu(device);
  for (const GpuDtype& d : gpu_dtypes()) {
    if (!j.contains("flops_per_sec") || !j["flops_per_sec"].contains(d.peak_name)) continue;
    const double got = j["flops_per_sec"][d.peak_name];
    const double promised = promised_gpu(p.name, d.peak_name);
    fmt::print("{:<9} matmul 8192³  {:8.1f} TFLOP/s measured{}\n", d.name, got / 1e12,
               promised > 0 ? fmt::format("  ({:.0f}% of the promised dense {:.1f})", 100 * got / promised, promised / 1e12) : "");
  }
  fmt::print("HBM copy         {:8.2f} TB/s (1 GiB float32, bytes read + written)\n", j["copy_bytes_per_sec"].get<double>() / 1e12);
  save_gpu_peaks(j);
  fmt::print("stored in {}\n", gpu_peaks_path().string());
}

void run_gpu_matmul(const Device& device, int64_t m, int64_t n, int64_t k, const std::string& dtype_arg, int reps) {
  require_gpu(device);
  std::string dtype = dtype_arg;
  if (dtype == "float8" || dtype == "fp8" || dtype == "float8_e4m3fn") dtype = "float8";
  else if (dtype != "tf32") dtype = std::string(dtype_name(dtype_from_name(dtype)));
  const bool known = std::any_of(gpu_dtypes().begin(), gpu_dtypes().end(), [&](const GpuDtype& d) { return dtype == d.name; });
  TALLY_CHECK(known, "bench matmul --device cuda: --dtype must be bfloat16, float16, float8, tf32 or float32, got '", dtype_arg, "'");
  const cuda::DeviceProperties p = cuda::get_device_properties(device.index());
  TfGuard tf(dtype == "tf32");
  std::vector<Tensor> keep;
  auto fn = matmul_call(dtype, m, n, k, device, keep);
  fn();  // warm-up: the cuBLASLt plan is chosen and cached
  accounting::FlopCounter counter;  // the ledger times each op with CUDA events
  for (int i = 0; i < reps; ++i) fn();
  const std::string op = dtype == "float8" ? "_scaled_mm" : "matmul";
  const auto totals = counter.op(op, accounting::Phase::Forward);
  const double flops = static_cast<double>(totals.flops) / reps, seconds = totals.seconds / reps;
  const double achieved = flops / seconds;
  fmt::print("matmul ({} x {}) @ ({} x {}) {} on {} ({})\n", m, k, k, n, dtype, device.str(), p.name);
  fmt::print("  FLOPs      {:.4g} per call (ledger; 2·m·n·k = {:.4g})\n", flops, 2.0 * m * n * k);
  fmt::print("  time       {:.3f} ms per call (mean of {}, CUDA events)\n", seconds * 1e3, reps);
  fmt::print("  FLOP/s     {:.1f} TFLOP/s\n", achieved / 1e12);
  const double promised = promised_gpu(p.name, dtype);
  if (promised > 0)
    fmt::print("  MFU        {:.1f}% of the promised dense {:.1f} TFLOP/s\n", 100 * achieved / promised, promised / 1e12);
  std::optional<nlohmann::json> measured = load_gpu_peaks(p.name);
  if (!measured) {
    fmt::print("  (no stored measured peak for this GPU: measuring now; `tally bench peak --device cuda` stores it)\n");
    measured = measure_gpu(device);
    save_gpu_peaks(*measured);
  }
  if (measured->contains("flops_per_sec") && (*measured)["flops_per_sec"].contains(dtype)) {
    const double ceiling = (*measured)["flops_per_sec"][dtype];
    fmt::print("  measured   {:.1f}% of the measured {} matmul peak {:.1f} TFLOP/s ({})\n", 100 * achieved / ceiling, dtype,
               ceiling / 1e12, (*measured)["measured_at"].get<std::string>());
  }
}

}  // namespace tally::cli
