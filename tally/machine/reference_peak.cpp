#include "tally/machine/reference_peak.h"

#include <fmt/core.h>

#include "tally/error/error.h"

namespace tally::machine {

namespace {

const PeakSpec& promised_spec(const std::vector<PeakSpec>& peaks, std::string_view dtype) {
  for (const auto& p : peaks)
    if (p.dtype == dtype) return p;
  TALLY_INTERNAL_ASSERT(false, "promised_cpu_peaks has no ", dtype, " row");
  return peaks.front();
}

}  // namespace

// Note [Reference peak]
// An MFU is only as honest as the peak it divides by. A bfloat16 matmul that oneDNN runs on AMX
// tiles (tdpbf16ps, 1024 FLOP/cycle) divided by the vdpbf16ps dot-product rate (128 FLOP/cycle)
// printed "564% of the measured bf16 dot-product peak" on a Sapphire Rapids guest. So each dtype is
// compared with the instruction its matmul really runs on, measured by the same kind of loop and
// promised by the same formula, and this choice is made here once for `bench peak` and
// `bench matmul`. A rate above a measured peak is never printed as a percentage: the probe
// under-measured, or the matmul ran on another instruction, and either way the figure is not an MFU.
ReferencePeak peak_for_dtype(const CpuInfo& cpu, const MeasuredPeaks& peaks, std::string_view dtype) {
  const std::vector<PeakSpec> promised = promised_cpu_peaks(cpu);
  const auto float32_fma = [&](std::string why) {
    return ReferencePeak{std::string(dtype), "float32 FMA", std::move(why), peaks.float32_fma_flops,
                         promised_spec(promised, "float32")};
  };
  if (dtype == "float32") return float32_fma("oneDNN's float32 matmul runs on FMA");
  if (dtype == "float16") return float32_fma("float16 is widened to float32");
  if (dtype == "float64")
    return {"float64", "float64 FMA", "the blocked float64 kernel runs on FMA; measured as half the float32 FMA rate",
            peaks.float32_fma_flops / 2, promised_spec(promised, "float64")};
  TALLY_CHECK(dtype == "bfloat16", "peak_for_dtype: expected float32, float64, bfloat16 or float16, got '", dtype, "'");
  if (cpu.amx_bf16)
    return {"bfloat16", "AMX tdpbf16ps", "oneDNN runs bfloat16 matmuls on AMX tiles", peaks.bf16_amx_flops,
            promised_spec(promised, "bfloat16")};
  if (cpu.avx512_bf16)  // promised_cpu_peaks already gives vdpbf16ps's rate when there is no AMX
    return {"bfloat16", "AVX512_BF16 vdpbf16ps", "oneDNN runs bfloat16 matmuls on AVX512_BF16", peaks.bf16_dot_flops,
            promised_spec(promised, "bfloat16")};
  return float32_fma("bfloat16 is widened to float32 (no native bf16 instruction)");
}

std::string format_against_peak(double achieved, double peak_flops, std::string_view peak_name, std::string_view if_above) {
  TALLY_CHECK(achieved >= 0, "format_against_peak: expected a non-negative rate, got ", achieved);
  if (!(peak_flops > 0)) return fmt::format("no {} to compare with", peak_name);  // e.g. no clock measured off x86
  if (achieved > peak_flops)
    return fmt::format("above the {} ({:.1f} GFLOP/s): {}", peak_name, peak_flops / 1e9, if_above);
  return fmt::format("{:.1f}% of the {} {:.1f} GFLOP/s", 100 * achieved / peak_flops, peak_name, peak_flops / 1e9);
}

std::string format_measured_mfu(double achieved, const ReferencePeak& ref) {
  if (ref.measured_flops_per_sec <= 0)
    return fmt::format("the {} peak is not measured ({}); run `tally bench peak`", ref.instruction, ref.why);
  return format_against_peak(achieved, ref.measured_flops_per_sec, fmt::format("measured {} peak", ref.instruction),
                             "not an MFU: the peak probe under-measured, or the matmul used another instruction");
}

std::vector<std::string> shortfall_reasons(const CpuInfo& cpu, double measured, double promised) {
  if (!(promised > 0) || measured >= kFarBelowPromised * promised) return {};
  std::vector<std::string> reasons;
  if (cpu.hypervisor && cpu.threads_per_core == 1 && cpu.usable_cores > 1) {
    reasons.push_back(fmt::format(
        "the guest reports {} cores with 1 thread each, but runs under a hypervisor (cpuinfo flag 'hypervisor'): its "
        "vCPUs may be hyperthreads of fewer physical cores, sharing their vector units",
        cpu.usable_cores));
  } else if (cpu.hypervisor) {
    reasons.push_back("it runs under a hypervisor (cpuinfo flag 'hypervisor'): other guests may share its physical cores");
  }
  const bool intel = cpu.vendor == "GenuineIntel";
  if (intel && (cpu.avx512f || cpu.amx_tile)) {
    reasons.push_back(fmt::format(
        "AVX-512 and AMX code runs at a lower clock than the {:.2f} GHz the promise assumes ({})", cpu.clock_ghz,
        cpu.clock_source));
  }
  if (intel && cpu.avx512f && cpu.fma_datapath_bits >= 512 && measured <= 0.55 * promised) {
    reasons.push_back("some Xeon Silver/Bronze and client cores have one 512-bit FMA port, not two: half the promise");
  }
  if (reasons.empty()) {
    reasons.push_back("other work may have held the cores throughout the measurement, or kept the clock low");
  }
  return reasons;
}

}  // namespace tally::machine
