#pragma once
// What this CPU is and what it promises: model, usable cores, SIMD/AMX features, a measured
// clock, and the peak FLOP/s per dtype that follow from them (see Note [Promised CPU peak]).

#include <string>
#include <string_view>
#include <vector>

namespace tally::machine {

/// The CPU tally runs on, as cpuid, the OS and a short timing loop see it.
struct CpuInfo {
  /// Brand string, e.g. "Intel(R) Xeon(R) Processor @ 2.50GHz".
  std::string model_name;
  /// Cores this process may run on (sched_getaffinity), not the machine's total.
  int usable_cores = 1;
  /// AVX2 (256-bit integer and float SIMD), usable only if the OS saves ymm state.
  bool avx2 = false;
  /// FMA3 fused multiply-add.
  bool fma = false;
  /// F16C: vcvtph2ps / vcvtps2ph, half <-> float conversion (x86-64-v3 with AVX2 and FMA).
  bool f16c = false;
  /// AVX-512 Foundation, with the OS saving zmm and opmask state.
  bool avx512f = false;
  /// AVX-512 BW (byte and word lanes), DQ (doubleword and quadword forms) and VL (the 128- and
  /// 256-bit forms): with F, the x86-64-v4 level that the avx512 kernels are built for.
  bool avx512bw = false;
  bool avx512dq = false;
  bool avx512vl = false;
  /// AVX512_BF16: vdpbf16ps (bf16 pair dot products into float32).
  bool avx512_bf16 = false;
  /// AVX512_FP16: native half-precision arithmetic (vfmadd231ph).
  bool avx512_fp16 = false;
  /// AMX tile registers, with the OS supporting tile state (a process must still request it).
  bool amx_tile = false;
  /// AMX bf16 tile matmul (tdpbf16ps).
  bool amx_bf16 = false;
  /// AMX int8 tile matmul (tdpbssd and friends).
  bool amx_int8 = false;
  /// Running under a hypervisor (cpuid leaf 1, ecx bit 31; "hypervisor" in /proc/cpuinfo's flags).
  bool hypervisor = false;
  /// Hardware threads per core as the OS reports them ("siblings" / "cpu cores"). A guest may report
  /// 1 although its vCPUs are hyperthreads sharing physical cores (Note [Promised CPU peak]).
  int threads_per_core = 1;
  /// "GenuineIntel", "AuthenticAMD", ... (cpuid leaf 0), and the display family (base + extended).
  std::string vendor;
  int family = 0;
  /// Width of the vector FMA datapath, which sets the AVX-512 rate: 512 on Intel's AVX-512 cores
  /// and Zen 5, 256 on Zen 4, which splits each 512-bit operation over its 256-bit pipes.
  int fma_datapath_bits = 0;
  /// The core clock in GHz that the promised peaks use (Note [The promised clock]).
  double clock_ghz = 0.0;
  /// Where clock_ghz comes from: the CPU's rated maximum (and which source gave it), or the clock
  /// measured in this process.
  std::string clock_source;
  /// What this process's own measurement gave (a dependent add chain).
  double clock_ghz_now = 0.0;
};

/// The CPU's description, computed once on first call (thread-safe; the clock loop takes ~50 ms).
const CpuInfo& cpu_info();

/// The CPU's vendor, family and instruction-set features alone (cpuid and the OS's saved state),
/// without cpu_info()'s clock measurement and /proc reads: what kernel dispatch reads at start-up.
const CpuInfo& cpu_features();

/// A CPU described by the text of a /proc/cpuinfo (this machine's or another's): model, vendor,
/// family, the feature flags the kernel lists, hypervisor, threads per core, one usable core per
/// "processor" entry, and the clock from "cpu MHz" (0 when absent). Runs no instruction of that CPU,
/// so tests can describe machines they do not run on.
CpuInfo parse_proc_cpuinfo(std::string_view text);

/// Width in bits of the vector FMA datapath for these features: 512 for AVX-512 except on Zen 4
/// (AMD family 0x19), which splits it over 256-bit pipes; 256 for AVX2; 128 otherwise.
int fma_datapath_bits(const CpuInfo& info);

/// A promised peak for one dtype and how it was derived.
struct PeakSpec {
  /// PyTorch dtype name: "float32", "float64", "bfloat16", "float16".
  std::string dtype;
  /// Cores x clock x FLOP per cycle per core for the best instruction the CPU has for this dtype.
  double flops_per_sec;
  /// The instruction and the arithmetic behind flops_per_sec, for printing next to MFU.
  std::string basis;
};

/// Promised (spec-sheet style) peak FLOP/s per floating dtype for `info`'s cores and clock.
std::vector<PeakSpec> promised_cpu_peaks(const CpuInfo& info);

}  // namespace tally::machine
