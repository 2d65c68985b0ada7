#include "tally/machine/device_specs.h"

#include <unistd.h>

#include <cctype>
#include <cmath>

#include <fmt/core.h>

#include "tally/machine/cpu_info.h"
#include "tally/error/error.h"

namespace tally::machine {

namespace {

// Note [Dense and sparse peaks]: NVIDIA's headline tensor-core figures since Ampere assume 2:4
// structured sparsity (two of every four weights zero), which doubles the rate. Training is
// dense, so the dense figure (half the headline) is the default everywhere: the lecture's
// h100_flop_per_sec = 1979e12 / 2. Both are stored so a sparse figure is never mistaken for the
// dense one; a peak is only ever chosen through promised_peak(..., sparse).
// Memory is in datasheet GB (1e9 bytes), as the lecture's h100_bytes = 80e9.
std::vector<DevicePeak> dense_and_sparse(const char* dtype, double dense) {
  return {{dtype, dense, false}, {dtype, 2 * dense, true}};
}

std::vector<DevicePeak> concat(std::initializer_list<std::vector<DevicePeak>> parts) {
  std::vector<DevicePeak> out;
  for (const auto& p : parts) out.insert(out.end(), p.begin(), p.end());
  return out;
}

// Hopper's compute is the same for H100 SXM and H200; only memory differs.
std::vector<DevicePeak> hopper_sxm_peaks() {
  // float32 is the CUDA-core (non-tensor) rate; the datasheet rounds it to 67 TFLOP/s.
  return concat({{{"float32", 67.5e12}}, dense_and_sparse("tf32", 494.5e12), dense_and_sparse("bfloat16", 989.5e12),
                 dense_and_sparse("float16", 989.5e12), dense_and_sparse("float8", 1979e12)});
}

const std::vector<DeviceSpec>& gpu_specs() {
  static const std::vector<DeviceSpec> specs = {
      {"A100 SXM 80GB", {"a100", "a100-sxm", "a100-80gb"}, 80e9, 2.039e12,
       concat({{{"float32", 19.5e12}}, dense_and_sparse("tf32", 156e12), dense_and_sparse("bfloat16", 312e12),
               dense_and_sparse("float16", 312e12)}),
       "NVIDIA A100 datasheet (SXM4 80GB); tensor-core peaks dense, sparse = 2:4-sparsity doubles"},
      {"H100 SXM", {"h100", "h100-sxm", "h100-sxm5"}, 80e9, 3.35e12, hopper_sxm_peaks(),
       "NVIDIA H100 datasheet (SXM5); its headline 1979 TFLOP/s bf16 assumes 2:4 sparsity, dense is half"},
      {"H200 SXM", {"h200", "h200-sxm"}, 141e9, 4.8e12, hopper_sxm_peaks(),
       "NVIDIA H200 datasheet (SXM): H100 SXM compute with 141 GB of HBM3e"},
      // NVIDIA quotes B200 tensor-core rates with 2:4 sparsity (bf16 4.5, fp8 9 PFLOP/s per GPU in
      // HGX B200); dense is half. float32 is the CUDA-core rate of the GTC 2024 announcement.
      // Figures vary with the SKU's power limit; these are the 1000 W part's.
      {"B200", {"b200"}, 192e9, 8e12,
       concat({{{"float32", 80e12}}, dense_and_sparse("bfloat16", 2.25e15), dense_and_sparse("float16", 2.25e15),
               dense_and_sparse("float8", 4.5e15)}),
       "NVIDIA B200 (GTC 2024 / HGX B200) per-GPU figures, sparse halved for dense; 192 GB HBM3e"},
  };
  return specs;
}

// This CPU: promised peaks from its ISA x cores x clock (Note [Promised CPU peak]); memory is
// the machine's RAM; no bandwidth is promised (`tally bench peak` measures it).
DeviceSpec make_cpu_spec() {
  const CpuInfo& info = cpu_info();
  DeviceSpec spec{"cpu", {"host"}, 0.0, std::nullopt, {}, {}};
  const long pages = sysconf(_SC_PHYS_PAGES), page_bytes = sysconf(_SC_PAGE_SIZE);
  if (pages > 0 && page_bytes > 0) spec.memory_bytes = static_cast<double>(pages) * static_cast<double>(page_bytes);
  spec.source = fmt::format("this machine: {}, {} usable cores at {:.2f} GHz ({}); peaks = cores x clock x "
                            "FLOP/cycle per ISA",
                            info.model_name, info.usable_cores, info.clock_ghz, info.clock_source);
  for (const auto& p : promised_cpu_peaks(info)) spec.peaks.push_back({p.dtype, p.flops_per_sec, false});
  return spec;
}

const DeviceSpec& cpu_spec() {
  static const DeviceSpec spec = make_cpu_spec();
  return spec;
}

// Lookups ignore case and separators: "H100 SXM", "h100-sxm" and "h100_sxm" are one name.
std::string normalize(std::string_view s) {
  std::string out;
  for (char c : s)
    if (std::isalnum(static_cast<unsigned char>(c))) out += static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return out;
}

bool matches(const DeviceSpec& spec, const std::string& key) {
  if (normalize(spec.name) == key) return true;
  for (const auto& a : spec.aliases)
    if (normalize(a) == key) return true;
  return false;
}

// PyTorch dtype names plus the short names the hardware world uses.
std::string canonical_dtype(std::string_view dtype) {
  const std::string d = normalize(dtype);
  if (d == "float32" || d == "fp32" || d == "float") return "float32";
  if (d == "float64" || d == "fp64" || d == "double") return "float64";
  if (d == "tf32" || d == "tfloat32") return "tf32";
  if (d == "bfloat16" || d == "bf16") return "bfloat16";
  if (d == "float16" || d == "fp16" || d == "half") return "float16";
  if (d == "float8" || d == "fp8" || d == "float8e4m3fn" || d == "float8e5m2" || d == "e4m3" || d == "e5m2")
    return "float8";
  return std::string(dtype);
}

// TFLOP/s for every GPU, as the datasheets print them (B200: 2250, not 2.25 P).
std::string format_rate(double flops_per_sec) {
  if (flops_per_sec >= 1e12) return fmt::format("{:.5g} TFLOP/s", flops_per_sec / 1e12);
  return fmt::format("{:.4g} GFLOP/s", flops_per_sec / 1e9);
}

}  // namespace

const DeviceSpec* device_spec_for_gpu(std::string_view driver_name) {
  // The driver's names carry the model as one word ("NVIDIA H100 80GB HBM3", "NVIDIA H200",
  // "NVIDIA A100-SXM4-80GB"); PCIe parts differ from the SXM datasheet and are not matched.
  if (driver_name.find("PCIe") != std::string_view::npos) return nullptr;
  for (const char* model : {"H100", "H200", "A100", "B200"}) {
    if (driver_name.find(model) == std::string_view::npos) continue;
    for (const DeviceSpec& s : gpu_specs())
      if (s.name.starts_with(model)) return &s;
  }
  return nullptr;
}

std::string PromisedPeak::label() const {
  return fmt::format("{} {} {}: {} (promised)", device, dtype, sparse ? "2:4-sparse" : "dense", format_rate(flops_per_sec));
}

std::string Mfu::label() const { return fmt::format("MFU {:.1f}% of {}", 100.0 * value, peak.label()); }

const std::vector<DeviceSpec>& device_specs() {
  static const std::vector<DeviceSpec> all = [] {
    std::vector<DeviceSpec> v = gpu_specs();
    v.push_back(cpu_spec());
    return v;
  }();
  return all;
}

std::string known_devices() {
  std::string out;
  for (const auto& s : gpu_specs()) {
    out += fmt::format("{}{} (", out.empty() ? "" : ", ", s.name);
    for (size_t i = 0; i < s.aliases.size(); ++i) out += (i ? ", " : "") + s.aliases[i];
    out += ")";
  }
  return out + ", cpu (this machine)";
}

const DeviceSpec& device_spec(std::string_view name) {
  const std::string key = normalize(name);
  for (const auto& s : gpu_specs())
    if (matches(s, key)) return s;
  // Checked by name before building the CPU spec, so a GPU lookup never probes this machine.
  if (key == "cpu" || key == "host") return cpu_spec();
  throw ValueError(detail::str_cat("unknown device '", name, "'; known devices: ", known_devices()));
}

PromisedPeak promised_peak(const DeviceSpec& device, std::string_view dtype, bool sparse) {
  const std::string want = canonical_dtype(dtype);
  std::string have;
  for (const auto& p : device.peaks) {
    if (p.dtype == want && p.sparse == sparse) return {device.name, p.dtype, p.sparse, p.flops_per_sec};
    have += fmt::format("{}{} {}", have.empty() ? "" : ", ", p.dtype, p.sparse ? "sparse" : "dense");
  }
  throw ValueError(detail::str_cat(device.name, " promises no ", sparse ? "2:4-sparse " : "dense ", "peak for '", dtype,
                                   "'; it has: ", have));
}

double mfu(double achieved_flops_per_sec, double promised_flops_per_sec) {
  TALLY_CHECK(std::isfinite(promised_flops_per_sec) && promised_flops_per_sec > 0,
              "mfu: promised FLOP/s must be positive and finite, got ", promised_flops_per_sec);
  TALLY_CHECK(std::isfinite(achieved_flops_per_sec) && achieved_flops_per_sec >= 0,
              "mfu: achieved FLOP/s must be non-negative and finite, got ", achieved_flops_per_sec);
  return achieved_flops_per_sec / promised_flops_per_sec;
}

Mfu mfu(double achieved_flops_per_sec, const PromisedPeak& peak) {
  return {achieved_flops_per_sec, peak, mfu(achieved_flops_per_sec, peak.flops_per_sec)};
}

}  // namespace tally::machine
