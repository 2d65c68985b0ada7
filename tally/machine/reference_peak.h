#pragma once
// Which peak a dtype's matmul is measured against, and how a rate is printed against a peak, so that
// `tally bench peak` and `tally bench matmul` make the same choice and never print an MFU above 100%
// (Note [Reference peak]).

#include <string>
#include <string_view>
#include <vector>

#include "tally/machine/cpu_info.h"

namespace tally::machine {

/// What `tally bench peak` measured on this CPU (FLOP/s and bytes/s; 0 where nothing was measured).
struct MeasuredPeaks {
  /// float32 FMA chains (vfmadd231ps on zmm or ymm).
  double float32_fma_flops = 0;
  /// AVX512_BF16 vdpbf16ps chains; 0 without AVX512_BF16.
  double bf16_dot_flops = 0;
  /// AMX tdpbf16ps tile products; 0 without AMX-BF16.
  double bf16_amx_flops = 0;
  /// STREAM triad and read bandwidths.
  double stream_triad_bytes = 0;
  double stream_read_bytes = 0;
  /// When (UTC, ISO 8601) and on which CPU model.
  std::string measured_at;
  std::string cpu;
};

/// The instruction a dtype's matmul runs on here, with its measured and promised rates.
struct ReferencePeak {
  /// PyTorch dtype name of the matmul.
  std::string dtype;
  /// E.g. "AMX tdpbf16ps", "AVX512_BF16 vdpbf16ps", "float32 FMA".
  std::string instruction;
  /// Why the matmul runs on it, e.g. "bfloat16 widened to float32".
  std::string why;
  /// The measured rate of that instruction; 0 when `tally bench peak` has not measured it.
  double measured_flops_per_sec = 0;
  /// The promised rate of the same instruction (cores x clock x FLOP/cycle).
  PeakSpec promised;
};

/// The peak `dtype`'s matmul is compared against on `cpu` (its features as the matmul kernel uses
/// them): float32 and float16 (widened) -> float32 FMA; float64 -> float64 FMA, half the float32
/// rate; bfloat16 -> AMX if the CPU has it, else AVX512_BF16 if it has that, else float32 FMA.
/// Raises ValueError for any other dtype.
ReferencePeak peak_for_dtype(const CpuInfo& cpu, const MeasuredPeaks& peaks, std::string_view dtype);

/// `achieved` FLOP/s against a peak called `peak_name` (e.g. "measured AMX tdpbf16ps peak"):
/// "83.8% of the measured AMX tdpbf16ps peak 472.6 GFLOP/s", or, when `achieved` exceeds the peak,
/// "above the <peak_name> (472.6 GFLOP/s): <if_above>" with no percentage; "no <peak_name> to
/// compare with" for a peak that is not positive.
std::string format_against_peak(double achieved, double peak_flops, std::string_view peak_name, std::string_view if_above);

/// The matmul MFU line against the measured peak of `ref`'s instruction (format_against_peak, with
/// the reason a rate can exceed a measured peak), or "not measured" when it has no measured rate.
std::string format_measured_mfu(double achieved, const ReferencePeak& ref);

/// Below this fraction of the promised peak, a measured peak is "far below" it and shortfall_reasons
/// says why it may be.
inline constexpr double kFarBelowPromised = 0.8;

/// Why `measured` may be far below `promised` on `cpu` (empty when it is not): vCPUs under a
/// hypervisor that may share physical cores, the lower AVX-512 / AMX clock of Intel cores, one
/// 512-bit FMA port, or, when none of these applies, other work on the cores.
std::vector<std::string> shortfall_reasons(const CpuInfo& cpu, double measured, double promised);

}  // namespace tally::machine
