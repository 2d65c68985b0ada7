#include "tally/machine/cpu_info.h"

#include <sched.h>

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <set>
#include <sstream>
#include <thread>
#include <utility>

#include "tally/machine/cache_dir.h"

#if defined(__x86_64__) || defined(__i386__)
#include <cpuid.h>
#define TALLY_X86 1
#endif

namespace tally::machine {

namespace {

#ifdef TALLY_X86
struct Regs {
  unsigned eax = 0, ebx = 0, ecx = 0, edx = 0;
};

Regs cpuid(unsigned leaf, unsigned subleaf) {
  Regs r;
  if (leaf > __get_cpuid_max(leaf & 0x80000000u, nullptr)) return r;  // unsupported leaf: all zero
  __cpuid_count(leaf, subleaf, r.eax, r.ebx, r.ecx, r.edx);
  return r;
}

bool bit(unsigned reg, int b) { return (reg >> b) & 1u; }

// Which register state the OS saves on context switch: a CPU feature is useless without it.
uint64_t xcr0() {
  uint32_t lo = 0, hi = 0;
  __asm__ volatile("xgetbv" : "=a"(lo), "=d"(hi) : "c"(0));
  return (static_cast<uint64_t>(hi) << 32) | lo;
}

std::string brand_string() {
  if (cpuid(0x80000000u, 0).eax < 0x80000004u) return {};
  char text[49] = {};
  for (unsigned i = 0; i < 3; ++i) {
    Regs r = cpuid(0x80000002u + i, 0);
    std::memcpy(text + 16 * i, &r, 16);  // eax, ebx, ecx, edx are the 16 bytes in order
  }
  return text;
}

void detect_vendor(CpuInfo& info) {
  const Regs l0 = cpuid(0, 0), l1 = cpuid(1, 0);
  char text[13] = {};
  std::memcpy(text, &l0.ebx, 4);  // the vendor string is ebx, edx, ecx in that order
  std::memcpy(text + 4, &l0.edx, 4);
  std::memcpy(text + 8, &l0.ecx, 4);
  info.vendor = text;
  const int base = static_cast<int>((l1.eax >> 8) & 0xF), extended = static_cast<int>((l1.eax >> 20) & 0xFF);
  info.family = base == 0xF ? base + extended : base;
}

void detect_features(CpuInfo& info) {
  const Regs l1 = cpuid(1, 0), l7 = cpuid(7, 0), l7s1 = cpuid(7, 1);
  info.hypervisor = bit(l1.ecx, 31);
  const bool osxsave = bit(l1.ecx, 27);
  const uint64_t xcr = osxsave ? xcr0() : 0;
  const bool os_ymm = (xcr & 0x6) == 0x6;             // SSE + AVX state
  const bool os_zmm = os_ymm && (xcr & 0xE0) == 0xE0;  // opmask, upper zmm0-15, zmm16-31
  const bool os_tiles = (xcr & 0x60000) == 0x60000;    // XTILECFG + XTILEDATA
  info.avx2 = os_ymm && bit(l7.ebx, 5);
  info.fma = os_ymm && bit(l1.ecx, 12);
  info.f16c = os_ymm && bit(l1.ecx, 29);
  info.avx512f = os_zmm && bit(l7.ebx, 16);
  info.avx512bw = os_zmm && bit(l7.ebx, 30);
  info.avx512dq = os_zmm && bit(l7.ebx, 17);
  info.avx512vl = os_zmm && bit(l7.ebx, 31);
  info.avx512_bf16 = os_zmm && bit(l7s1.eax, 5);
  info.avx512_fp16 = os_zmm && bit(l7.edx, 23);
  info.amx_tile = os_tiles && bit(l7.edx, 24);
  info.amx_bf16 = info.amx_tile && bit(l7.edx, 22);
  info.amx_int8 = info.amx_tile && bit(l7.edx, 25);
  info.fma_datapath_bits = fma_datapath_bits(info);
}

// Note [Measuring the clock]: a chain of dependent `add reg, reg` retires one add per cycle, so
// adds / seconds is the clock. `add reg, imm` chains are no good: recent cores fold the
// immediates at rename and report several times the real clock (MACHINE.md). The addend comes
// from a volatile so the compiler cannot fold the chain either.
double time_add_chain_seconds(uint64_t blocks) {
  volatile uint64_t addend_source = 3;
  uint64_t x = 1, addend = addend_source, n = blocks;
  const auto t0 = std::chrono::steady_clock::now();
  __asm__ volatile(
      "1:\n\t"
      ".rept 100\n\t"
      "add %[a], %[x]\n\t"
      ".endr\n\t"
      "dec %[n]\n\t"
      "jnz 1b\n\t"
      : [x] "+r"(x), [n] "+r"(n)
      : [a] "r"(addend)
      : "cc");
  const auto t1 = std::chrono::steady_clock::now();
  return std::chrono::duration<double>(t1 - t0).count();
}

double measure_clock_ghz() {
  // Many short windows, keeping the fastest: on a shared machine a window that loses the core to
  // another process (or catches the core still ramping up from idle) is simply slower, never faster.
  // A clock that stays low for longer than this is what the run measures (Note [The promised clock]).
  constexpr uint64_t kBlocks = 10000;  // 1e6 adds: ~0.3 ms at 3 GHz
  time_add_chain_seconds(20 * kBlocks);  // ~6 ms warm-up so the core leaves its idle frequency
  double best = 1e30;
  for (int rep = 0; rep < 40; ++rep) best = std::min(best, time_add_chain_seconds(kBlocks));  // ~13 ms
  return static_cast<double>(kBlocks) * 100.0 / best / 1e9;
}
#endif  // TALLY_X86

std::string trim(std::string_view s) {
  const auto first = s.find_first_not_of(" \t");
  if (first == std::string_view::npos) return {};
  return std::string(s.substr(first, s.find_last_not_of(" \t") - first + 1));
}

double to_number(const std::string& s) {
  try {
    return std::stod(s);
  } catch (const std::exception&) {
    return 0.0;  // a field this parser cannot read is as good as absent
  }
}

int count_usable_cores() {
  cpu_set_t set;
  CPU_ZERO(&set);
  if (sched_getaffinity(0, sizeof(set), &set) == 0) return std::max(1, CPU_COUNT(&set));
  return std::max(1u, std::thread::hardware_concurrency());
}

// Note [The promised clock]
// A promised peak is cores x clock x FLOP per cycle, and MFU divides by it: the clock must be one
// a reader can look up, and the same for every run on the machine. The CPU's rated maximum is
// that, where the machine states it: CPUID leaf 0x16 (Intel, in MHz) or cpufreq's
// cpuinfo_max_freq. Many virtual machines state neither (the AMD EPYC guests this project runs
// on); there the clock measured in this process stands in, and the run says so: a measured clock
// moves with the AVX-512 licence level and with what shares the host (2.4 to 3.1 GHz on one
// core), so two runs' MFU are then comparable only within those bounds. Earlier versions kept
// the highest clock ever measured in the cache folder, which made a run's MFU depend on the
// machine's history.
void set_promised_clock(CpuInfo& info) {
#ifdef TALLY_X86
  if (const unsigned mhz = cpuid(0x16, 0).ebx & 0xFFFF; mhz > 0) {
    info.clock_ghz = mhz / 1000.0;
    info.clock_source = "rated maximum (CPUID leaf 0x16)";
    return;
  }
#endif
  std::ifstream max_freq("/sys/devices/system/cpu/cpu0/cpufreq/cpuinfo_max_freq");
  if (double khz = 0; max_freq >> khz && khz > 0) {
    info.clock_ghz = khz / 1e6;
    info.clock_source = "rated maximum (cpufreq cpuinfo_max_freq)";
    return;
  }
  info.clock_ghz = info.clock_ghz_now;
  info.clock_source = "measured in this run (a dependent add chain; this machine states no rated clock)";
}

CpuInfo detect() {
  // What the OS says (topology, and everything on a CPU cpuid cannot ask), then cpuid on top.
  const CpuInfo os = parse_proc_cpuinfo(read_text_file("/proc/cpuinfo").value_or(""));
  CpuInfo info;
  info.usable_cores = count_usable_cores();
  info.threads_per_core = os.threads_per_core;
#ifdef TALLY_X86
  info.model_name = trim(brand_string());
  detect_vendor(info);
  detect_features(info);
  info.clock_ghz_now = measure_clock_ghz();
#else
  info.hypervisor = os.hypervisor;
#endif
  if (info.model_name.empty()) info.model_name = os.model_name;
  set_promised_clock(info);
  return info;
}

std::string describe(const char* instruction, const char* per_cycle, double flop_per_cycle, const CpuInfo& info) {
  std::ostringstream os;
  os.precision(3);
  os << instruction << ": " << per_cycle << " = " << flop_per_cycle << " FLOP/cycle/core x " << info.usable_cores
     << " cores x " << info.clock_ghz << " GHz";
  return os.str();
}

}  // namespace


const CpuInfo& cpu_info() {
  static const CpuInfo info = detect();  // C++ guarantees one thread-safe initialisation
  return info;
}

const CpuInfo& cpu_features() {
  static const CpuInfo info = [] {
    CpuInfo i;
#ifdef TALLY_X86
    detect_vendor(i);
    detect_features(i);
#endif
    return i;
  }();
  return info;
}

int fma_datapath_bits(const CpuInfo& info) {
  // Zen 4 (AMD family 0x19) executes AVX-512 on 256-bit pipes: same instructions, half the rate.
  const bool half_width_avx512 = info.vendor == "AuthenticAMD" && info.family == 0x19;
  return info.avx512f ? (half_width_avx512 ? 256 : 512) : info.avx2 ? 256 : 128;
}

CpuInfo parse_proc_cpuinfo(std::string_view text) {
  CpuInfo info;
  info.usable_cores = 0;
  info.model_name = "unknown CPU";
  int siblings = 0, cores = 0;
  std::set<std::string, std::less<>> flags;
  bool first_flags = true;
  std::istringstream lines{std::string(text)};
  for (std::string line; std::getline(lines, line);) {
    const auto colon = line.find(':');
    if (colon == std::string::npos) continue;
    const std::string key = trim(std::string_view(line).substr(0, colon)), value = trim(std::string_view(line).substr(colon + 1));
    if (key == "processor") ++info.usable_cores;
    // The first processor's entry describes them all; later ones repeat it.
    if (info.usable_cores > 1) continue;
    if (key == "model name") info.model_name = value;
    else if (key == "vendor_id") info.vendor = value;
    else if (key == "cpu family") info.family = static_cast<int>(to_number(value));
    else if (key == "siblings") siblings = static_cast<int>(to_number(value));
    else if (key == "cpu cores") cores = static_cast<int>(to_number(value));
    else if (key == "cpu MHz") info.clock_ghz = info.clock_ghz_now = to_number(value) / 1000.0;
    else if (key == "flags" && first_flags) {
      first_flags = false;
      std::istringstream words(value);
      for (std::string w; words >> w;) flags.insert(w);
    }
  }
  info.usable_cores = std::max(1, info.usable_cores);
  if (siblings > 0 && cores > 0) info.threads_per_core = std::max(1, siblings / cores);
  const auto has = [&](std::string_view flag) { return flags.count(flag) == 1; };
  info.hypervisor = has("hypervisor");
  info.avx2 = has("avx2");
  info.fma = has("fma");
  info.f16c = has("f16c");
  info.avx512f = has("avx512f");
  info.avx512bw = has("avx512bw");
  info.avx512dq = has("avx512dq");
  info.avx512vl = has("avx512vl");
  info.avx512_bf16 = has("avx512_bf16");
  info.avx512_fp16 = has("avx512_fp16");
  info.amx_tile = has("amx_tile");
  info.amx_bf16 = info.amx_tile && has("amx_bf16");
  info.amx_int8 = info.amx_tile && has("amx_int8");
  info.fma_datapath_bits = fma_datapath_bits(info);
  return info;
}

// Note [Promised CPU peak]: FLOP/cycle/core = FMA issue ports x lanes x 2 (an FMA is 2 FLOP),
// times usable cores times the clock measured by Note [Measuring the clock]. Assumptions:
//  - two FMA ports as wide as the datapath: 512-bit on Xeon Gold/Platinum, Sapphire Rapids and
//    Zen 5 (some Xeon Silver and client parts have one, and then the measured peak is half the
//    promise); Zen 4 runs each AVX-512 instruction as two halves on its two 256-bit FMA pipes, so
//    it is promised 2 x 8 lanes x 2 = 32, and likewise half the vdpbf16ps rate;
//  - the scalar clock: under heavy AVX-512 load the core may run ~8% slower (MACHINE.md: 3.8 vs
//    3.5 GHz), which is part of the gap between promised and measured peaks, not hidden in it;
//  - vdpbf16ps counts as 16 lanes x 2 bf16 products x 2 FLOP on 2 ports = 128. MACHINE.md measured
//    only ~32 FLOP/cycle for it on Sapphire Rapids (half the float32 rate): the promise is the ISA's
//    formula, and `tally bench peak` reports the measured figure beside it;
//  - AMX tdpbf16ps: a 16x32 by 32x16 bf16 tile product (8192 MACs = 16384 FLOP) every 16 cycles =
//    1024 FLOP/cycle, which MACHINE.md's 3.3 TFLOP/s at ~3.5 GHz confirms (~94%).
// A dtype with no native instruction is promised the float32 rate, since kernels convert it to
// float32 and compute there.
std::vector<PeakSpec> promised_cpu_peaks(const CpuInfo& info) {
  struct Rate {
    const char* instruction;
    const char* per_cycle;
    double flop_per_cycle;
  };
  const bool full_width = info.fma_datapath_bits >= 512;
  Rate f32{"scalar/SSE", "2 ports x 4 lanes", 8};
  if (info.avx512f && full_width) f32 = {"AVX-512 vfmadd231ps", "2 ports x 16 lanes x 2", 64};
  else if (info.avx512f) f32 = {"AVX-512 vfmadd231ps", "2 256-bit ports x 8 lanes x 2", 32};
  else if (info.avx2 && info.fma) f32 = {"AVX2 vfmadd231ps", "2 ports x 8 lanes x 2", 32};
  const Rate f64{info.avx512f ? "AVX-512 vfmadd231pd" : info.avx2 && info.fma ? "AVX2 vfmadd231pd" : "scalar/SSE",
                 "half the float32 lanes", f32.flop_per_cycle / 2};
  Rate bf16{"converted to float32", f32.per_cycle, f32.flop_per_cycle};
  if (info.amx_bf16) bf16 = {"AMX tdpbf16ps", "16x16x32 MACs x 2 per 16 cycles", 1024};
  else if (info.avx512_bf16 && full_width) bf16 = {"AVX512_BF16 vdpbf16ps", "2 ports x 16 lanes x 2 products x 2", 128};
  else if (info.avx512_bf16) bf16 = {"AVX512_BF16 vdpbf16ps", "2 256-bit ports x 8 lanes x 2 products x 2", 64};
  Rate f16{"converted to float32", f32.per_cycle, f32.flop_per_cycle};
  if (info.avx512_fp16 && full_width) f16 = {"AVX512_FP16 vfmadd231ph", "2 ports x 32 lanes x 2", 128};
  else if (info.avx512_fp16) f16 = {"AVX512_FP16 vfmadd231ph", "2 256-bit ports x 16 lanes x 2", 64};

  const double cycles_per_sec = info.usable_cores * info.clock_ghz * 1e9;
  std::vector<PeakSpec> peaks;
  const std::pair<const char*, Rate> rows[] = {{"float32", f32}, {"float64", f64}, {"bfloat16", bf16}, {"float16", f16}};
  for (const auto& [dtype, rate] : rows)
    peaks.push_back({dtype, rate.flop_per_cycle * cycles_per_sec,
                     describe(rate.instruction, rate.per_cycle, rate.flop_per_cycle, info)});
  return peaks;
}

}  // namespace tally::machine
