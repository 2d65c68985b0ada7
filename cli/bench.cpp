// `tally bench peak`: measure this machine's peaks (float32 FMA, bf16 dot product, AMX) and memory
// bandwidth and store them for later runs. `tally bench matmul`: the lecture's time_matmul — FLOPs
// (read off the ledger), time, FLOP/s, and MFU against the promised and the measured peak of the
// instruction the matmul runs on.

#include <fmt/core.h>

#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <optional>

#include "cli/commands.h"
#include "cli/gpu.h"
#include "tally/kernels/cpu/matmul.h"
#include "tally/machine/cache_dir.h"
#include "tally/machine/cpu_info.h"
#include "tally/machine/peak_probe.h"
#include "tally/machine/reference_peak.h"
#include "tally/tally.h"

namespace tally::cli {

namespace {

namespace fs = std::filesystem;

/// Where measured peaks are kept between runs (TALLY_PEAKS_FILE, or the cache folder).
fs::path peaks_path() {
  if (const char* x = std::getenv("TALLY_PEAKS_FILE")) return x;
  return machine::cache_dir() / "peaks.json";
}

using machine::MeasuredPeaks;
using machine::ReferencePeak;

std::optional<MeasuredPeaks> load_peaks() {
  std::ifstream in(peaks_path());
  if (!in) return std::nullopt;
  try {
    nlohmann::json j = nlohmann::json::parse(in);
    MeasuredPeaks p;
    p.float32_fma_flops = j.at("float32_flops_per_sec");
    p.bf16_dot_flops = j.value("bfloat16_dot_flops_per_sec", 0.0);
    p.bf16_amx_flops = j.value("bfloat16_amx_flops_per_sec", 0.0);
    p.stream_triad_bytes = j.at("stream_triad_bytes_per_sec");
    p.stream_read_bytes = j.at("stream_read_bytes_per_sec");
    p.measured_at = j.at("measured_at");
    p.cpu = j.at("cpu");
    const auto& cpu = machine::cpu_info();
    if (p.cpu != cpu.model_name) return std::nullopt;  // measured on another machine
    // Written before tally measured every instruction this CPU has (no AMX probe, say): measure again
    // rather than compare a matmul with the wrong instruction's peak (Note [Reference peak]).
    if (cpu.avx512_bf16 && !j.contains("bfloat16_dot_flops_per_sec")) return std::nullopt;
    if (cpu.amx_bf16 && !j.contains("bfloat16_amx_flops_per_sec")) return std::nullopt;
    return p;
  } catch (const std::exception&) {
    return std::nullopt;  // an unreadable file is as good as none: measure again
  }
}

void save_peaks(const MeasuredPeaks& p) {
  const nlohmann::json j{{"float32_flops_per_sec", p.float32_fma_flops},
                         {"bfloat16_dot_flops_per_sec", p.bf16_dot_flops},
                         {"bfloat16_amx_flops_per_sec", p.bf16_amx_flops},
                         {"stream_triad_bytes_per_sec", p.stream_triad_bytes},
                         {"stream_read_bytes_per_sec", p.stream_read_bytes},
                         {"measured_at", p.measured_at},
                         {"cpu", p.cpu}};
  machine::write_cache_file(peaks_path(), j.dump(2) + "\n");
}

MeasuredPeaks measure_peaks() {
  const auto& cpu = machine::cpu_info();
  const int cores = cpu.usable_cores;
  MeasuredPeaks p;
  p.float32_fma_flops = machine::measure_fma_peak_flops(cores, 1.0);
  if (cpu.avx512_bf16) p.bf16_dot_flops = machine::measure_bf16_dot_peak_flops(cores, 1.0);
  if (cpu.amx_bf16) {
    try {
      p.bf16_amx_flops = machine::measure_amx_bf16_peak_flops(cores, 1.0);
    } catch (const NotImplementedError& e) {  // the kernel refused tile state: say so, keep the rest
      fmt::print("bf16 AMX peak      not measured: {}\n", e.what());
    }
  }
  p.cpu = cpu.model_name;
  const auto stream = machine::measure_stream(int64_t{256} << 20, cores);
  p.stream_triad_bytes = stream.triad_bytes_per_sec;
  p.stream_read_bytes = stream.read_bytes_per_sec;
  p.measured_at = machine::utc_timestamp();
  return p;
}

// "<measured> GFLOP/s measured: <n>% of the promised <p> GFLOP/s (<basis>)", and, when far below the
// promise, why it may be, on the lines below.
void print_probe(std::string_view label, const ReferencePeak& ref, std::string_view how) {
  const auto& cpu = machine::cpu_info();
  const double promised = ref.promised.flops_per_sec;
  fmt::print("{:<18} {:8.1f} GFLOP/s measured: {} ({}); {}\n", label, ref.measured_flops_per_sec / 1e9,
             machine::format_against_peak(ref.measured_flops_per_sec, promised, "promised",
                                          "the promise's clock or FLOP/cycle is too low for this CPU"),
             ref.promised.basis, how);
  for (const auto& reason : machine::shortfall_reasons(cpu, ref.measured_flops_per_sec, promised))
    fmt::print("{:<18} far below the promise; it may be that {}\n", "", reason);
}

void run_peak() {
  const auto& cpu = machine::cpu_info();
  fmt::print("measuring on {} ({} cores, {} thread{} each{})...\n", cpu.model_name, cpu.usable_cores,
             cpu.threads_per_core, cpu.threads_per_core == 1 ? "" : "s", cpu.hypervisor ? ", under a hypervisor" : "");
  const MeasuredPeaks p = measure_peaks();
  // Each probe against the promise of its own instruction: peak_for_dtype on the CPU as it is, and
  // without AMX for the dot-product probe that AMX would otherwise stand in for.
  print_probe("float32 FMA peak", machine::peak_for_dtype(cpu, p, "float32"), "FMA chains");
  fmt::print("memory bandwidth   {:8.1f} GB/s triad, {:.1f} GB/s read (STREAM, 256 MiB arrays)\n", p.stream_triad_bytes / 1e9,
             p.stream_read_bytes / 1e9);
  fmt::print("ridge point        {:8.1f} FLOP/byte (measured float32 peak / triad bandwidth)\n",
             p.float32_fma_flops / p.stream_triad_bytes);
  machine::CpuInfo without_amx = cpu;
  without_amx.amx_bf16 = false;
  if (p.bf16_dot_flops > 0) print_probe("bf16 dot peak", machine::peak_for_dtype(without_amx, p, "bfloat16"), "vdpbf16ps chains");
  else fmt::print("bf16 dot peak      not measured: this CPU has no AVX512_BF16\n");
  if (p.bf16_amx_flops > 0) print_probe("bf16 AMX peak", machine::peak_for_dtype(cpu, p, "bfloat16"), "tdpbf16ps tile products");
  else if (!cpu.amx_bf16) fmt::print("bf16 AMX peak      not measured: this CPU has no AMX\n");
  fmt::print("matmul MFU is measured against (`tally bench matmul`):\n");
  const machine::CpuInfo features = kernels::detail::matmul_cpu_features();
  for (const char* dtype : {"float32", "float64", "bfloat16", "float16"}) {
    const ReferencePeak ref = machine::peak_for_dtype(features, p, dtype);
    fmt::print("  {:<9} {:<22} {:8.1f} GFLOP/s measured   {}\n", dtype, ref.instruction, ref.measured_flops_per_sec / 1e9,
               ref.why);
  }
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
  const Device device(a.device);
  if (device.is_cuda()) return run_gpu_matmul(device, a.m, a.n, a.k, a.dtype, a.reps);
  TALLY_CHECK(device.is_cpu(), "bench matmul: --device must be cpu or cuda[:N], got '", a.device, "' (a meta tensor runs no kernel to time)");
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
  std::optional<MeasuredPeaks> measured = load_peaks();
  if (!measured) {
    fmt::print("  (no stored measured peak: measuring now; `tally bench peak` stores it)\n");
    measured = measure_peaks();
    // Storing is a cache for the next call: a path that cannot be written costs a re-measurement
    // then, not this measurement.
    try {
      save_peaks(*measured);
    } catch (const IOError& e) {
      fmt::print(stderr, "tally: warning: could not store the measured peaks ({}); the next call measures them again\n", e.what());
    }
  }
  // The instruction this dtype's matmul really runs on, promised and measured (Note [Reference peak]).
  const ReferencePeak ref = machine::peak_for_dtype(kernels::detail::matmul_cpu_features(), *measured, dtype);
  fmt::print("  MFU        {} ({})\n",
             machine::format_against_peak(achieved, ref.promised.flops_per_sec, "promised " + ref.instruction + " peak",
                                          "not an MFU: the promise's clock or FLOP/cycle is too low for this CPU"),
             ref.promised.basis);
  fmt::print("  measured   {} ({}; {})\n", machine::format_measured_mfu(achieved, ref), ref.why, measured->measured_at);
}

}  // namespace

void add_bench_command(CLI::App& app) {
  auto* bench = app.add_subcommand("bench", "Measure this machine's peaks, or time a matmul with FLOPs and MFU");
  bench->require_subcommand(1);
  auto peak_device = std::make_shared<std::string>("cpu");
  auto* peak = bench->add_subcommand("peak", "Measure the FMA, bf16 dot-product and AMX peaks and memory bandwidth (or a GPU's matmul peaks), and store them");
  peak->add_option("--device", *peak_device, "cpu, or cuda / cuda:N")->capture_default_str();
  peak->callback([peak_device] {
    const Device device(*peak_device);
    TALLY_CHECK(device.is_cpu() || device.is_cuda(), "bench peak: --device must be cpu or cuda[:N], got '", *peak_device, "'");
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
