// `tally bench peak`: measure this machine's float32 FMA peak and memory bandwidth and store them
// for later runs. `tally bench matmul`: the lecture's time_matmul — FLOPs (read off the ledger),
// time, FLOP/s, and MFU against both the promised and the measured peak.

#include <fmt/core.h>

#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <optional>

#include "cli/commands.h"
#include "cli/gpu.h"
#include "tally/machine/cache_dir.h"
#include "tally/machine/cpu_info.h"
#include "tally/machine/peak_probe.h"
#include "tally/tally.h"

namespace tally::cli {

namespace {

namespace fs = std::filesystem;

/// Where measured peaks are kept between runs (TALLY_PEAKS_FILE, or the cache folder).
fs::path peaks_path() {
  if (const char* x = std::getenv("TALLY_PEAKS_FILE")) return x;
  return machine::cache_dir() / "peaks.json";
}

struct MeasuredPeaks {
  double float32_flops = 0;
  double bf16_flops = 0;  // 0: this CPU has no bf16 instruction to measure
  double stream_triad_bytes = 0;
  double stream_read_bytes = 0;
  std::string measured_at;
  std::string cpu;
};

std::optional<MeasuredPeaks> load_peaks() {
  std::ifstream in(peaks_path());
  if (!in) return std::nullopt;
  try {
    nlohmann::json j = nlohmann::json::parse(in);
    MeasuredPeaks p{j.at("float32_flops_per_sec"), j.value("bfloat16_flops_per_sec", 0.0),
                    j.at("stream_triad_bytes_per_sec"), j.at("stream_read_bytes_per_sec"), j.at("measured_at"), j.at("cpu")};
    if (p.cpu != machine::cpu_info().model_name) return std::nullopt;  // measured on another machine
    return p;
  } catch (const std::exception&) {
    return std::nullopt;  // an unreadable file is as good as none: measure again
  }
}

void save_peaks(const MeasuredPeaks& p) {
  const nlohmann::json j{{"float32_flops_per_sec", p.float32_flops}, {"bfloat16_flops_per_sec", p.bf16_flops},
                         {"stream_triad_bytes_per_sec", p.stream_triad_bytes},
                         {"stream_read_bytes_per_sec", p.stream_read_bytes}, {"measured_at", p.measured_at},
                         {"cpu", p.cpu}};
  machine::write_file_atomically(peaks_path(), j.dump(2) + "\n");
}

double promised_for(std::string_view dtype) {
  for (const auto& p : machine::promised_cpu_peaks(machine::cpu_info()))
    if (p.dtype == dtype) return p.flops_per_sec;
  return 0;
}

std::string promised_basis(std::string_view dtype) {
  for (const auto& p : machine::promised_cpu_peaks(machine::cpu_info()))
    if (p.dtype == dtype) return p.basis;
  return "";
}

MeasuredPeaks measure_peaks() {
  const int cores = machine::cpu_info().usable_cores;
  MeasuredPeaks p;
  p.float32_flops = machine::measure_fma_peak_flops(cores, 1.0);
  if (machine::cpu_info().avx512_bf16) p.bf16_flops = machine::measure_bf16_dot_peak_flops(cores, 1.0);
  p.cpu = machine::cpu_info().model_name;
  const auto stream = machine::measure_stream(int64_t{256} << 20, cores);
  p.stream_triad_bytes = stream.triad_bytes_per_sec;
  p.stream_read_bytes = stream.read_bytes_per_sec;
  p.measured_at = machine::utc_timestamp();
  return p;
}

void run_peak() {
  const auto& cpu = machine::cpu_info();
  fmt::print("measuring on {} ({} cores)...\n", cpu.model_name, cpu.usable_cores);
  const MeasuredPeaks p = measure_peaks();
  const double promised = promised_for("float32");
  fmt::print("float32 FMA peak   {:8.1f} GFLOP/s measured  ({:.0f}% of the promised {:.1f}: {})\n", p.float32_flops / 1e9,
             100 * p.float32_flops / promised, promised / 1e9, promised_basis("float32"));
  fmt::print("memory bandwidth   {:8.1f} GB/s triad, {:.1f} GB/s read (STREAM, 256 MiB arrays)\n", p.stream_triad_bytes / 1e9,
             p.stream_read_bytes / 1e9);
  fmt::print("ridge point        {:8.1f} FLOP/byte (measured peak / triad bandwidth)\n", p.float32_flops / p.stream_triad_bytes);
  if (p.bf16_flops > 0) {
    const double promised_bf16 = promised_for("bfloat16");
    fmt::print("bf16 dot peak      {:8.1f} GFLOP/s measured  ({:.0f}% of the promised {:.1f}: {}); vdpbf16ps chains\n",
               p.bf16_flops / 1e9, 100 * p.bf16_flops / promised_bf16, promised_bf16 / 1e9, promised_basis("bfloat16"));
  } else {
    fmt::print("bf16 dot peak      not measured: this CPU has no AVX512_BF16\n");
  }
  if (!cpu.amx_bf16) fmt::print("bf16 AMX peak      not measured: this CPU has no AMX\n");
  else fmt::print("bf16 AMX peak      not measured: tally has no AMX probe yet (the promise above is the ISA's formula)\n");
  save_peaks(p);
  fmt::print("stored in {}\n", peaks_path().string());
}

struct MatmulArgs {
  int64_t m = 2048, n = 2048, k = 2048;
  std::string dtype = "float32";
  int reps = 5;
  std::string device = "cpu";
};

Dtype parse_dtype(const std::string& name) {
  const Dtype d = dtype_from_name(name);
  if (d != kFloat32 && d != kFloat64 && d != kBFloat16 && d != kFloat16)
    throw ValueError("bench matmul: --dtype must be a float type (float32, float64, bfloat16, float16), got '" + name + "'");
  return d;
}

void run_matmul(const MatmulArgs& a) {
  TALLY_CHECK(a.m > 0 && a.n > 0 && a.k > 0 && a.reps > 0, "bench matmul: sizes and --reps must be positive (got m=", a.m,
              ", n=", a.n, ", k=", a.k, ", reps=", a.reps, ")");
  if (const Device device(a.device); device.is_cuda()) return run_gpu_matmul(device, a.m, a.n, a.k, a.dtype, a.reps);
  const Dtype dt = parse_dtype(a.dtype);
  const std::string dtype(dtype_name(dt));
  Tensor x = randn({a.m, a.k}).to(dt), y = randn({a.k, a.n}).to(dt);
  Tensor out = matmul(x, y);  // warm-up: builds and caches the kernel
  accounting::FlopCounter counter;
  const auto start = std::chrono::steady_clock::now();
  for (int i = 0; i < a.reps; ++i) out = matmul(x, y);
  const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count() / a.reps;
  const double flops = static_cast<double>(counter.op("matmul", accounting::Phase::Forward).flops) / a.reps;
  const double achieved = flops / seconds;
  fmt::print("matmul ({} x {}) @ ({} x {}) {}\n", a.m, a.k, a.k, a.n, dtype);
  fmt::print("  FLOPs      {:.4g} per call (ledger; 2·m·n·k = {:.4g})\n", flops, 2.0 * a.m * a.n * a.k);
  fmt::print("  time       {:.3f} ms per call (mean of {})\n", seconds * 1e3, a.reps);
  fmt::print("  FLOP/s     {:.1f} GFLOP/s\n", achieved / 1e9);
  const double promised = promised_for(dtype);
  if (promised > 0)
    fmt::print("  MFU        {:.1f}% of the promised {:.1f} GFLOP/s ({})\n", 100 * achieved / promised, promised / 1e9,
               promised_basis(dtype));
  std::optional<MeasuredPeaks> measured = load_peaks();
  if (!measured) {
    fmt::print("  (no stored measured peak: measuring now; `tally bench peak` stores it)\n");
    measured = measure_peaks();
    save_peaks(*measured);
  }
  // The measured ceiling of the instruction this dtype's kernel can use: the bf16 dot product
  // where the CPU has one, otherwise the float32 FMA (what widened kernels run on).
  const bool bf16_peak = dt == kBFloat16 && measured->bf16_flops > 0;
  const double ceiling = bf16_peak ? measured->bf16_flops : measured->float32_flops;
  fmt::print("  measured   {:.1f}% of the measured {} peak {:.1f} GFLOP/s ({})\n", 100 * achieved / ceiling,
             bf16_peak ? "bf16 dot-product" : "float32 FMA", ceiling / 1e9, measured->measured_at);
}

}  // namespace

void add_bench_command(CLI::App& app) {
  auto* bench = app.add_subcommand("bench", "Measure this machine's peaks, or time a matmul with FLOPs and MFU");
  bench->require_subcommand(1);
  auto peak_device = std::make_shared<std::string>("cpu");
  auto* peak = bench->add_subcommand("peak", "Measure the float32 FMA peak and memory bandwidth (or a GPU's matmul peaks), and store them");
  peak->add_option("--device", *peak_device, "cpu, or cuda / cuda:N")->capture_default_str();
  peak->callback([peak_device] {
    const Device device(*peak_device);
    if (device.is_cuda()) run_gpu_peak(device);
    else run_peak();
  });
  auto args = std::make_shared<MatmulArgs>();
  auto* mm = bench->add_subcommand("matmul", "Time an (m x k) @ (k x n) matmul: FLOPs, time, FLOP/s, MFU");
  mm->add_option("--m", args->m, "rows of the left operand")->capture_default_str();
  mm->add_option("--n", args->n, "columns of the right operand")->capture_default_str();
  mm->add_option("--k", args->k, "inner dimension")->capture_default_str();
  mm->add_option("--dtype", args->dtype, "float32, float64, bfloat16 or float16")->capture_default_str();
  mm->add_option("--reps", args->reps, "timed calls")->capture_default_str();
  mm->add_option("--device", args->device, "cpu, or cuda / cuda:N (dtypes there: bfloat16, float16, float8, tf32, float32)")
      ->capture_default_str();
  mm->callback([args] { run_matmul(*args); });
}

}  // namespace tally::cli
