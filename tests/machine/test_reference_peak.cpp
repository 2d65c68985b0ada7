// Which peak each dtype's matmul is compared against, and how rates are printed against peaks, on
// CPUs described by a /proc/cpuinfo text (Note [Reference peak]): an Intel Xeon guest with AMX (the
// machine of issue 8), AMD Zen 4 without AMX, an Intel Xeon with AVX-512 but no bf16 instruction.
#include <gtest/gtest.h>

#include <regex>
#include <string>
#include <vector>

#include "tally/error/error.h"
#include "tally/machine/cpu_info.h"
#include "tally/machine/reference_peak.h"

namespace tally::machine {
namespace {

// `processors` entries of /proc/cpuinfo as Linux prints them, with the fields parse_proc_cpuinfo reads.
std::string proc_cpuinfo(const std::string& vendor, int family, const std::string& model, int processors, int siblings,
                         int cores, const std::string& flags) {
  std::string text;
  for (int i = 0; i < processors; ++i) {
    text += "processor\t: " + std::to_string(i) + "\nvendor_id\t: " + vendor + "\ncpu family\t: " + std::to_string(family) +
            "\nmodel\t\t: 143\nmodel name\t: " + model + "\nstepping\t: 8\ncpu MHz\t\t: 2600.000\ncache size\t: 107520 KB\n" +
            "physical id\t: 0\nsiblings\t: " + std::to_string(siblings) + "\ncore id\t\t: " + std::to_string(i) +
            "\ncpu cores\t: " + std::to_string(cores) + "\nflags\t\t: " + flags + "\n\n";
  }
  return text;
}

const char* const kBaseFlags = "fpu vme de pse tsc msr pae mce cx8 apic sep pge mca cmov pat sse sse2 ssse3 sse4_1 sse4_2 ";

// Issue 8's machine: a 16-vCPU Sapphire Rapids guest that reports 1 thread per core.
CpuInfo xeon_amx_guest() {
  return parse_proc_cpuinfo(proc_cpuinfo(
      "GenuineIntel", 6, "Intel(R) Xeon(R) Platinum 8481C CPU @ 2.70GHz", 16, 16, 16,
      std::string(kBaseFlags) + "fma avx avx2 avx512f avx512dq avx512cd avx512bw avx512vl avx512_vnni avx512_bf16 "
                                "hypervisor avx512_fp16 amx_bf16 amx_tile amx_int8 arch_lbr"));
}

// AMD Zen 4 on bare metal, 8 cores with 2 threads each: AVX512_BF16, no AMX.
CpuInfo zen4() {
  return parse_proc_cpuinfo(proc_cpuinfo("AuthenticAMD", 25, "AMD Ryzen 7 7700X 8-Core Processor", 16, 16, 8,
                                         std::string(kBaseFlags) + "fma avx avx2 avx512f avx512dq avx512cd avx512bw "
                                                                   "avx512vl avx512_bf16 avx512_vnni"));
}

// Cascade Lake: AVX-512 but neither AVX512_BF16 nor AMX, so bfloat16 is widened to float32.
CpuInfo cascade_lake() {
  return parse_proc_cpuinfo(proc_cpuinfo("GenuineIntel", 6, "Intel(R) Xeon(R) Gold 6248 CPU @ 2.50GHz", 4, 8, 4,
                                         std::string(kBaseFlags) + "fma avx avx2 avx512f avx512dq avx512cd avx512bw "
                                                                   "avx512vl avx512_vnni"));
}

MeasuredPeaks some_peaks() {
  MeasuredPeaks p;
  p.float32_fma_flops = 1312e9;
  p.bf16_dot_flops = 700e9;
  p.bf16_amx_flops = 30000e9;
  return p;
}

// Every "<number>%" in `text`.
std::vector<double> percentages(const std::string& text) {
  std::vector<double> out;
  const std::regex percent(R"(([0-9]+(\.[0-9]+)?)\s*%)");
  for (auto it = std::sregex_iterator(text.begin(), text.end(), percent); it != std::sregex_iterator(); ++it)
    out.push_back(std::stod((*it)[1].str()));
  return out;
}

TEST(ParseProcCpuinfo, DescribesTheFakedCpus) {
  const CpuInfo intel = xeon_amx_guest();
  EXPECT_EQ(intel.vendor, "GenuineIntel");
  EXPECT_EQ(intel.family, 6);
  EXPECT_EQ(intel.model_name, "Intel(R) Xeon(R) Platinum 8481C CPU @ 2.70GHz");
  EXPECT_EQ(intel.usable_cores, 16);
  EXPECT_EQ(intel.threads_per_core, 1);
  EXPECT_TRUE(intel.hypervisor);
  EXPECT_TRUE(intel.avx2 && intel.fma && intel.avx512f && intel.avx512_bf16 && intel.avx512_fp16);
  EXPECT_TRUE(intel.amx_tile && intel.amx_bf16 && intel.amx_int8);
  EXPECT_EQ(intel.fma_datapath_bits, 512);
  EXPECT_DOUBLE_EQ(intel.clock_ghz, 2.6);

  const CpuInfo amd = zen4();
  EXPECT_EQ(amd.vendor, "AuthenticAMD");
  EXPECT_EQ(amd.family, 0x19);
  EXPECT_EQ(amd.threads_per_core, 2);
  EXPECT_FALSE(amd.hypervisor);
  EXPECT_TRUE(amd.avx512f && amd.avx512_bf16);
  EXPECT_FALSE(amd.amx_tile || amd.amx_bf16 || amd.avx512_fp16);
  EXPECT_EQ(amd.fma_datapath_bits, 256);  // Zen 4 splits 512-bit operations
  EXPECT_EQ(cascade_lake().fma_datapath_bits, 512);
}

TEST(ParseProcCpuinfo, AgreesWithCpuidOnThisMachine) {
  // The parser and the cpuid path describe the same CPU the same way (where /proc/cpuinfo exists).
  const CpuInfo parsed = parse_proc_cpuinfo([] {
    std::FILE* f = std::fopen("/proc/cpuinfo", "r");
    std::string text;
    if (f == nullptr) return text;
    char buf[4096];
    for (size_t n; (n = std::fread(buf, 1, sizeof buf, f)) > 0;) text.append(buf, n);
    std::fclose(f);
    return text;
  }());
  if (parsed.vendor.empty()) GTEST_SKIP() << "no /proc/cpuinfo";
  const CpuInfo& real = cpu_info();
  EXPECT_EQ(parsed.vendor, real.vendor);
  EXPECT_EQ(parsed.family, real.family);
  EXPECT_EQ(parsed.hypervisor, real.hypervisor);
  EXPECT_EQ(parsed.threads_per_core, real.threads_per_core);
  EXPECT_EQ(parsed.avx2, real.avx2);
  EXPECT_EQ(parsed.avx512f, real.avx512f);
  EXPECT_EQ(parsed.avx512_bf16, real.avx512_bf16);
  EXPECT_EQ(parsed.amx_bf16, real.amx_bf16);
  EXPECT_EQ(parsed.fma_datapath_bits, real.fma_datapath_bits);
}

TEST(PeakForDtype, IntelWithAmxComparesBfloat16WithTheAmxPeak) {
  const CpuInfo cpu = xeon_amx_guest();
  const MeasuredPeaks peaks = some_peaks();
  const ReferencePeak bf16 = peak_for_dtype(cpu, peaks, "bfloat16");
  EXPECT_EQ(bf16.instruction, "AMX tdpbf16ps");
  EXPECT_EQ(bf16.measured_flops_per_sec, peaks.bf16_amx_flops);
  EXPECT_DOUBLE_EQ(bf16.promised.flops_per_sec, 1024 * 16 * 2.6e9);  // the same instruction's promise
  EXPECT_NE(bf16.promised.basis.find("AMX tdpbf16ps"), std::string::npos) << bf16.promised.basis;
  const ReferencePeak f32 = peak_for_dtype(cpu, peaks, "float32");
  EXPECT_EQ(f32.instruction, "float32 FMA");
  EXPECT_EQ(f32.measured_flops_per_sec, peaks.float32_fma_flops);
  EXPECT_DOUBLE_EQ(f32.promised.flops_per_sec, 64 * 16 * 2.6e9);
  // float16 is widened to float32 whatever AVX512_FP16 promises.
  EXPECT_EQ(peak_for_dtype(cpu, peaks, "float16").instruction, "float32 FMA");
  EXPECT_DOUBLE_EQ(peak_for_dtype(cpu, peaks, "float16").promised.flops_per_sec, f32.promised.flops_per_sec);
  const ReferencePeak f64 = peak_for_dtype(cpu, peaks, "float64");
  EXPECT_EQ(f64.instruction, "float64 FMA");
  EXPECT_EQ(f64.measured_flops_per_sec, peaks.float32_fma_flops / 2);
  // Where oneDNN does not run AMX (capped ISA), the same CPU's bf16 matmul runs on vdpbf16ps.
  CpuInfo capped = cpu;
  capped.amx_bf16 = false;
  const ReferencePeak dot = peak_for_dtype(capped, peaks, "bfloat16");
  EXPECT_EQ(dot.instruction, "AVX512_BF16 vdpbf16ps");
  EXPECT_EQ(dot.measured_flops_per_sec, peaks.bf16_dot_flops);
  EXPECT_DOUBLE_EQ(dot.promised.flops_per_sec, 128 * 16 * 2.6e9);
}

TEST(PeakForDtype, Zen4WithoutAmxComparesBfloat16WithTheDotProductPeak) {
  const CpuInfo cpu = zen4();
  const MeasuredPeaks peaks = some_peaks();
  const ReferencePeak bf16 = peak_for_dtype(cpu, peaks, "bfloat16");
  EXPECT_EQ(bf16.instruction, "AVX512_BF16 vdpbf16ps");
  EXPECT_EQ(bf16.measured_flops_per_sec, peaks.bf16_dot_flops);
  EXPECT_DOUBLE_EQ(bf16.promised.flops_per_sec, 64 * 16 * 2.6e9);  // half rate on 256-bit pipes
  EXPECT_EQ(peak_for_dtype(cpu, peaks, "float32").instruction, "float32 FMA");
  EXPECT_DOUBLE_EQ(peak_for_dtype(cpu, peaks, "float32").promised.flops_per_sec, 32 * 16 * 2.6e9);
}

TEST(PeakForDtype, WithoutANativeBf16InstructionBfloat16IsComparedWithFma) {
  const MeasuredPeaks peaks = some_peaks();
  const ReferencePeak bf16 = peak_for_dtype(cascade_lake(), peaks, "bfloat16");
  EXPECT_EQ(bf16.instruction, "float32 FMA");
  EXPECT_EQ(bf16.measured_flops_per_sec, peaks.float32_fma_flops);
  EXPECT_NE(bf16.why.find("widened"), std::string::npos) << bf16.why;
  EXPECT_THROW(peak_for_dtype(cascade_lake(), peaks, "int32"), ValueError);
}

TEST(MfuLine, BelowThePeakIsAPercentage) {
  ReferencePeak ref = peak_for_dtype(zen4(), some_peaks(), "bfloat16");
  EXPECT_EQ(format_measured_mfu(350e9, ref), "50.0% of the measured AVX512_BF16 vdpbf16ps peak 700.0 GFLOP/s");
  EXPECT_EQ(format_measured_mfu(700e9, ref), "100.0% of the measured AVX512_BF16 vdpbf16ps peak 700.0 GFLOP/s");
  ref.measured_flops_per_sec = 0;  // not measured yet
  EXPECT_NE(format_measured_mfu(350e9, ref).find("not measured"), std::string::npos);
  EXPECT_EQ(percentages(format_measured_mfu(350e9, ref)).size(), 0u);
}

TEST(MfuLine, AboveTheMeasuredPeakIsFlaggedNeverAPercentageAbove100) {
  // Issue 8: a bf16 matmul at 5.64x the peak it was divided by printed "564% of the measured bf16
  // dot-product peak". Whatever peak a rate exceeds, the line says so and shows no such percentage.
  MeasuredPeaks peaks = some_peaks();
  peaks.bf16_amx_flops = 500e9;  // an under-measuring probe
  const ReferencePeak ref = peak_for_dtype(xeon_amx_guest(), peaks, "bfloat16");
  const std::string line = format_measured_mfu(5.64 * 500e9, ref);
  EXPECT_EQ(line.rfind("above the measured AMX tdpbf16ps peak (500.0 GFLOP/s)", 0), 0u) << line;
  EXPECT_NE(line.find("the peak probe under-measured, or the matmul used another instruction"), std::string::npos) << line;
  EXPECT_EQ(percentages(line).size(), 0u) << line;
  // Against any peak and at any rate, no printed percentage exceeds 100.
  for (const double peak : {1.0, 472.6e9, 3.3e12})
    for (double ratio = 0.0; ratio < 8.0; ratio += 0.0625) {
      const std::string s = format_against_peak(ratio * peak, peak, "promised peak", "not an MFU");
      for (const double pct : percentages(s)) EXPECT_LE(pct, 100.0) << s;
      EXPECT_EQ(s.find("above") != std::string::npos, ratio > 1.0) << s;
    }
  EXPECT_EQ(format_against_peak(1e9, 0.0, "promised peak", "x"), "no promised peak to compare with");
  EXPECT_THROW(format_against_peak(-1.0, 1e9, "promised peak", "x"), ValueError);
}

TEST(Shortfall, AHypervisorGuestSaysItsVcpusMayShareCores) {
  // Issue 8's numbers: 1312 GFLOP/s measured against 2652 promised on 16 vCPUs of 1 thread each.
  const CpuInfo cpu = xeon_amx_guest();
  const auto reasons = shortfall_reasons(cpu, 1312e9, 2652e9);
  std::string all;
  for (const auto& r : reasons) all += r + "\n";
  EXPECT_NE(all.find("reports 16 cores with 1 thread each"), std::string::npos) << all;
  EXPECT_NE(all.find("hypervisor"), std::string::npos) << all;
  EXPECT_NE(all.find("lower clock"), std::string::npos) << all;  // Intel AVX-512 licence
  EXPECT_NE(all.find("one 512-bit FMA port"), std::string::npos) << all;  // 49% is half the promise
  // Near the promise there is nothing to explain.
  EXPECT_TRUE(shortfall_reasons(cpu, 0.95 * 2652e9, 2652e9).empty());
  EXPECT_TRUE(shortfall_reasons(cpu, kFarBelowPromised * 2652e9, 2652e9).empty());
}

TEST(Shortfall, BareMetalWithoutAKnownCauseBlamesOtherWork) {
  const auto reasons = shortfall_reasons(zen4(), 0.5, 1.0);
  ASSERT_EQ(reasons.size(), 1u);
  EXPECT_NE(reasons[0].find("other work"), std::string::npos) << reasons[0];
  EXPECT_EQ(reasons[0].find("hypervisor"), std::string::npos) << reasons[0];
  // A guest whose cores report 2 threads each does not hide hyperthreads, but may still share.
  CpuInfo guest = zen4();
  guest.hypervisor = true;
  const auto guest_reasons = shortfall_reasons(guest, 0.5, 1.0);
  ASSERT_EQ(guest_reasons.size(), 1u);
  EXPECT_NE(guest_reasons[0].find("other guests may share"), std::string::npos) << guest_reasons[0];
}

}  // namespace
}  // namespace tally::machine
