// cpu_info against independent sources (the kernel's /proc/cpuinfo flags, sched_getaffinity, an
// imul-latency clock estimate) and promised_cpu_peaks against its own stated formula; the
// measured probes against the promise they must not exceed.
#include <gtest/gtest.h>
#include <sched.h>

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <fstream>
#include <set>
#include <sstream>
#include <string>
#include <utility>
#include <vector>

#include "tally/machine/cpu_info.h"
#include "tally/machine/peak_probe.h"
#include "tally/error/error.h"

namespace tally::machine {
namespace {

std::set<std::string> proc_cpuinfo_flags() {
  std::ifstream in("/proc/cpuinfo");
  std::string line;
  std::set<std::string> flags;
  while (std::getline(in, line)) {
    if (line.rfind("flags", 0) != 0) continue;
    std::istringstream words(line.substr(line.find(':') + 1));
    for (std::string w; words >> w;) flags.insert(w);
    break;
  }
  return flags;
}

double peak_of(const std::vector<PeakSpec>& peaks, const std::string& dtype) {
  for (const auto& p : peaks)
    if (p.dtype == dtype) return p.flops_per_sec;
  ADD_FAILURE() << "no peak for " << dtype;
  return 0.0;
}

TEST(CpuInfo, DetectsWhatThisBuildWasCompiledFor) {
  // The compiler's target macros say which instructions this binary already uses; the CPU running
  // it must have them, and cpu_info must say so (losing AVX-512 would halve every promised figure).
#ifdef __AVX512F__
  EXPECT_TRUE(cpu_info().avx512f);
#endif
#ifdef __AVX2__
  EXPECT_TRUE(cpu_info().avx2);
#endif
#ifdef __FMA__
  EXPECT_TRUE(cpu_info().fma);
#endif
  SUCCEED();
}

TEST(CpuInfo, AgreesWithTheKernelsFlags) {
  const auto flags = proc_cpuinfo_flags();
  if (flags.empty()) GTEST_SKIP() << "no /proc/cpuinfo flags";
  const CpuInfo& info = cpu_info();
  // The kernel lists a feature only when the CPU has it and the kernel enabled its state, so a
  // listed flag must be detected; for the long-established ones the converse holds too.
  EXPECT_EQ(info.avx2, flags.count("avx2") == 1);
  EXPECT_EQ(info.fma, flags.count("fma") == 1);
  EXPECT_EQ(info.avx512f, flags.count("avx512f") == 1);
  const std::pair<const char*, bool> newer[] = {{"avx512_bf16", info.avx512_bf16}, {"avx512_fp16", info.avx512_fp16},
                                                {"amx_tile", info.amx_tile},       {"amx_bf16", info.amx_bf16},
                                                {"amx_int8", info.amx_int8}};
  for (const auto& [name, detected] : newer) {
    if (flags.count(name)) {
      EXPECT_TRUE(detected) << name;
    }
  }
  // AMX sub-features are meaningless without tiles.
  if (!info.amx_tile) {
    EXPECT_FALSE(info.amx_bf16 || info.amx_int8);
  }
}

TEST(CpuInfo, CountsUsableCoresAndNamesTheModel) {
  cpu_set_t set;
  CPU_ZERO(&set);
  ASSERT_EQ(sched_getaffinity(0, sizeof(set), &set), 0);
  EXPECT_EQ(cpu_info().usable_cores, CPU_COUNT(&set));
  EXPECT_FALSE(cpu_info().model_name.empty());
  EXPECT_NE(cpu_info().model_name.front(), ' ');
  EXPECT_EQ(&cpu_info(), &cpu_info());  // computed once
}

// A second clock estimate through a different instruction: `imul` has a 3-cycle latency on every
// x86 core since Nehalem, so a dependent chain runs at clock / 3.
double imul_clock_ghz() {
  volatile uint64_t seed = 3;
  double best = 1e30;
  for (int rep = 0; rep < 40; ++rep) {  // best of many short windows, as cpu_info does, for the same noise
    uint64_t x = seed, m = seed, n = 4000;
    const auto t0 = std::chrono::steady_clock::now();
    __asm__ volatile("1:\n\t.rept 50\n\timul %[m], %[x]\n\t.endr\n\tdec %[n]\n\tjnz 1b"
                     : [x] "+r"(x), [n] "+r"(n)
                     : [m] "r"(m)
                     : "cc");
    best = std::min(best, std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count());
  }
  return 4000.0 * 50 * 3 / best / 1e9;
}

TEST(CpuInfo, ClockIsPlausibleAndMatchesAnImulChain) {
  const double ghz = cpu_info().clock_ghz;
  EXPECT_GT(ghz, 0.8);
  EXPECT_LT(ghz, 6.5);
  // The machine is shared and noisy: 25% still catches a folded chain (2x or more) or a unit slip.
  EXPECT_NEAR(ghz, imul_clock_ghz(), 0.25 * ghz);
}

TEST(CpuInfo, PromisedPeaksFollowTheFormula) {
  const CpuInfo& info = cpu_info();
  const auto peaks = promised_cpu_peaks(info);
  ASSERT_EQ(peaks.size(), 4u);
  for (const auto& p : peaks) {
    EXPECT_GT(p.flops_per_sec, 0.0) << p.dtype;
    EXPECT_FALSE(p.basis.empty()) << p.dtype;
  }
  const double cycles = info.usable_cores * info.clock_ghz * 1e9;
  // FLOP per cycle per core: two FMA ports x lanes x 2, the lanes set by the widest float ISA and
  // the datapath it runs on (Zen 4 splits 512-bit operations over 256-bit pipes).
  const bool full = info.fma_datapath_bits >= 512;
  const double f32 = info.avx512f ? (full ? 64 : 32) : (info.avx2 && info.fma) ? 32 : 8;
  EXPECT_DOUBLE_EQ(peak_of(peaks, "float32"), f32 * cycles);
  EXPECT_DOUBLE_EQ(peak_of(peaks, "float64"), f32 / 2 * cycles);
  EXPECT_DOUBLE_EQ(peak_of(peaks, "bfloat16"),
                   (info.amx_bf16 ? 1024 : info.avx512_bf16 ? (full ? 128 : 64) : f32) * cycles);
  EXPECT_DOUBLE_EQ(peak_of(peaks, "float16"), (info.avx512_fp16 ? (full ? 128 : 64) : f32) * cycles);
}

TEST(CpuInfo, PromiseScalesWithCoresAndClock) {
  CpuInfo one = cpu_info();
  one.usable_cores = 1;
  one.clock_ghz = 2.0;
  CpuInfo four = one;
  four.usable_cores = 4;
  four.clock_ghz = 3.0;
  EXPECT_DOUBLE_EQ(peak_of(promised_cpu_peaks(four), "float32"), 6.0 * peak_of(promised_cpu_peaks(one), "float32"));
  CpuInfo no_avx512 = one;
  no_avx512.avx512f = no_avx512.avx512_bf16 = no_avx512.avx512_fp16 = false;
  no_avx512.amx_tile = no_avx512.amx_bf16 = no_avx512.amx_int8 = false;
  EXPECT_DOUBLE_EQ(peak_of(promised_cpu_peaks(no_avx512), "float32"), 32 * 2e9);
  EXPECT_DOUBLE_EQ(peak_of(promised_cpu_peaks(no_avx512), "bfloat16"), 32 * 2e9);
  // The same AVX-512 + AVX512_BF16 features on a 512-bit datapath (Sapphire Rapids) and on a
  // 256-bit one (Zen 4) promise different rates.
  CpuInfo wide = one;
  wide.avx2 = wide.fma = wide.avx512f = wide.avx512_bf16 = true;
  wide.avx512_fp16 = wide.amx_tile = wide.amx_bf16 = wide.amx_int8 = false;
  wide.fma_datapath_bits = 512;
  CpuInfo split = wide;
  split.fma_datapath_bits = 256;
  EXPECT_DOUBLE_EQ(peak_of(promised_cpu_peaks(wide), "float32"), 64 * 2e9);
  EXPECT_DOUBLE_EQ(peak_of(promised_cpu_peaks(split), "float32"), 32 * 2e9);
  EXPECT_DOUBLE_EQ(peak_of(promised_cpu_peaks(wide), "bfloat16"), 128 * 2e9);
  EXPECT_DOUBLE_EQ(peak_of(promised_cpu_peaks(split), "bfloat16"), 64 * 2e9);
}

TEST(CpuInfo, VendorAndFamilyMatchTheKernel) {
  std::ifstream in("/proc/cpuinfo");
  std::string line, vendor;
  int family = -1;
  while (std::getline(in, line) && (vendor.empty() || family < 0)) {
    const auto colon = line.find(':');
    if (colon == std::string::npos) continue;
    const std::string value = line.substr(std::min(line.size(), colon + 2));
    if (line.rfind("vendor_id", 0) == 0) vendor = value;
    if (line.rfind("cpu family", 0) == 0) family = std::stoi(value);
  }
  if (vendor.empty() || family < 0) GTEST_SKIP() << "no vendor_id / cpu family in /proc/cpuinfo";
  EXPECT_EQ(cpu_info().vendor, vendor);
  EXPECT_EQ(cpu_info().family, family);
  EXPECT_EQ(cpu_info().fma_datapath_bits,
            !cpu_info().avx512f ? (cpu_info().avx2 ? 256 : 128) : (vendor == "AuthenticAMD" && family == 0x19) ? 256 : 512);
}

TEST(PeakProbe, FmaPeakIsPositiveAndWithinThePromise) {
  const double measured = measure_fma_peak_flops(1, 0.05);
  const double promised_one_core = peak_of(promised_cpu_peaks(cpu_info()), "float32") / cpu_info().usable_cores;
  // Loose below: sanitizer and -O0 builds spill the chains to memory (ASan measured 7%), but a
  // unit slip (GFLOP vs FLOP) or skipped work still lands far outside.
  EXPECT_GT(measured, 0.01 * promised_one_core);
  EXPECT_LT(measured, 1.15 * promised_one_core);  // no code can beat the ISA (15% for clock noise)
}

/// A probe of an instruction the CPU may lack: without it, refused before any such instruction
/// runs (one would raise SIGILL); with it, within the promise for one core.
void expect_within_promise_or_refused(bool has_instruction, double (*probe)(int, double)) {
  if (!has_instruction) {
    EXPECT_THROW(probe(1, 0.05), NotImplementedError);
    return;
  }
  const double measured = probe(1, 0.05);
  const double promised_one_core = peak_of(promised_cpu_peaks(cpu_info()), "bfloat16") / cpu_info().usable_cores;
  EXPECT_GT(measured, 0.01 * promised_one_core);
  EXPECT_LT(measured, 1.15 * promised_one_core);
  EXPECT_THROW(probe(0, 0.05), ValueError);
}

TEST(PeakProbe, Bf16DotPeakIsWithinThePromiseOrRefusedWithoutTheInstruction) {
  expect_within_promise_or_refused(cpu_info().avx512_bf16, measure_bf16_dot_peak_flops);
}

TEST(PeakProbe, AmxPeakIsWithinThePromiseOrRefusedWithoutAmx) {
  expect_within_promise_or_refused(cpu_info().amx_bf16, measure_amx_bf16_peak_flops);
}

TEST(PeakProbe, StreamTriadIsPlausible) {
  // 8 MiB arrays fit in cache: a quick functional check, not a DRAM measurement.
  const StreamResult r = measure_stream(8 << 20, 1, 2);
  for (double v : {r.read_bytes_per_sec, r.copy_bytes_per_sec, r.scale_bytes_per_sec, r.add_bytes_per_sec,
                   r.triad_bytes_per_sec}) {
    EXPECT_GT(v, 1e8);  // loose for sanitizer builds (ASan: ~0.5 GB/s); optimised builds see > 10 GB/s
    EXPECT_LT(v, 1e12);
  }
  EXPECT_GT(measure_stream_triad_bytes_per_sec(1 << 20, 1), 1e8);
  EXPECT_THROW(measure_stream(0, 1), ValueError);
}

}  // namespace
}  // namespace tally::machine
