#pragma once
// What each device promises: FLOP/s per dtype, memory and memory bandwidth, from the vendors'
// datasheets for GPUs and from cpu_info() for this CPU. MFU is quoted against one of these peaks,
// and every MFU figure carries the peak it used (see Note [Dense and sparse peaks]).

#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace tally::machine {

/// One promised compute rate of a device.
struct DevicePeak {
  /// "float32", "float64", "tf32", "bfloat16", "float16" or "float8" (e4m3 and e5m2 run alike).
  std::string dtype;
  /// Promised FLOP/s (an FMA counts as 2 FLOP).
  double flops_per_sec;
  /// True for the datasheet's 2:4 structured-sparsity figure, which dense training never reaches.
  bool sparse = false;
};

/// A device's promised compute, memory and bandwidth, with where the numbers come from.
struct DeviceSpec {
  /// Canonical name, e.g. "H100 SXM".
  std::string name;
  /// Other accepted names, e.g. "h100"; lookups ignore case, spaces, '-' and '_'.
  std::vector<std::string> aliases;
  /// Memory in bytes (datasheet GB = 1e9 bytes, as the lecture's 80e9 for an H100).
  double memory_bytes;
  /// Promised memory bandwidth in bytes/s; empty when nothing is promised (this CPU: measure it).
  std::optional<double> memory_bytes_per_sec;
  /// Dense peaks for every dtype listed, plus sparse ones where the datasheet quotes them.
  std::vector<DevicePeak> peaks;
  /// The source and its conventions, printed next to any figure derived from this spec.
  std::string source;
};

/// The peak an MFU or time estimate was computed against, named so it can always be printed.
struct PromisedPeak {
  /// Canonical device name.
  std::string device;
  /// Dtype of the peak, as in DevicePeak::dtype.
  std::string dtype;
  /// Whether this is a 2:4-sparsity figure.
  bool sparse = false;
  /// Promised FLOP/s.
  double flops_per_sec = 0.0;
  /// E.g. "H100 SXM bfloat16 dense: 989.5 TFLOP/s (promised)".
  std::string label() const;
};

/// Every known device, this CPU last (computing it runs cpu_info()'s ~50 ms clock loop once).
const std::vector<DeviceSpec>& device_specs();

/// The device called `name` (case-insensitive, aliases accepted: "h100" is the H100 SXM, "cpu"
/// this machine). Raises ValueError listing the known devices for an unknown name.
const DeviceSpec& device_spec(std::string_view name);

/// The datasheet entry for a GPU the driver names ("NVIDIA H100 80GB HBM3" is the H100 SXM), or
/// null when the table has none for it.
const DeviceSpec* device_spec_for_gpu(std::string_view driver_name);

/// Names of the known devices with their aliases, for messages and --help, without probing the CPU.
std::string known_devices();

/// The promised peak of `device` for `dtype` (PyTorch names or bf16/fp16/fp32/fp8), dense by
/// default. Raises ValueError when the device promises nothing for that dtype and sparsity.
PromisedPeak promised_peak(const DeviceSpec& device, std::string_view dtype = "bfloat16", bool sparse = false);

/// Model FLOPs utilisation: achieved FLOP/s / promised FLOP/s. Raises ValueError for a
/// non-positive peak or a negative or non-finite achieved rate.
double mfu(double achieved_flops_per_sec, double promised_flops_per_sec);

/// An MFU figure and the peak it is relative to.
struct Mfu {
  /// Achieved FLOP/s.
  double achieved_flops_per_sec = 0.0;
  /// The peak it was divided by.
  PromisedPeak peak;
  /// achieved / peak.
  double value = 0.0;
  /// E.g. "MFU 41.3% of H100 SXM bfloat16 dense: 989.5 TFLOP/s (promised)".
  std::string label() const;
};

/// MFU against a named peak.
Mfu mfu(double achieved_flops_per_sec, const PromisedPeak& peak);

}  // namespace tally::machine
