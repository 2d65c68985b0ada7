// The choice of CPU kernel set, once per process (Note [CPU kernel dispatch] in dispatch.h).

#include "tally/kernels/cpu/dispatch.h"

#include <algorithm>
#include <cstdlib>
#include <string>

#include "tally/error/error.h"
#include "tally/machine/cpu_info.h"

namespace tally::kernels {

namespace {

constexpr CpuKernelSet kSets[] = {CpuKernelSet::Baseline, CpuKernelSet::Avx2, CpuKernelSet::Avx512};

/// What `cpu` lacks of what `set` needs, as cpuinfo flag names ("" when nothing).
std::string missing_features(const machine::CpuInfo& cpu, CpuKernelSet set) {
  std::string out;
  auto need = [&](bool has, const char* flag) {
    if (has) return;
    if (!out.empty()) out += ' ';
    out += flag;
  };
  if (set >= CpuKernelSet::Avx2) {
    need(cpu.avx2, "avx2");
    need(cpu.fma, "fma");
    need(cpu.f16c, "f16c");
  }
  if (set >= CpuKernelSet::Avx512) {
    need(cpu.avx512f, "avx512f");
    need(cpu.avx512bw, "avx512bw");
    need(cpu.avx512dq, "avx512dq");
    need(cpu.avx512vl, "avx512vl");
  }
  return out;
}

struct Choice {
  CpuKernelSet set;
  std::string_view reason;
};

// A build with kernel passes (TALLY_KERNEL_PASSES) chooses among them; a -march=native build has
// the one set its compiler flags give, which TALLY_CPU_TARGET names.
#define TALLY_KERNEL_STR_(x) #x
#define TALLY_KERNEL_STR(x) TALLY_KERNEL_STR_(x)
constexpr std::string_view kBuildTarget = TALLY_KERNEL_STR(TALLY_CPU_TARGET);

const Choice& choice() {
  static const Choice c = [] {
    const char* env = std::getenv("TALLY_CPU_KERNELS");
    std::optional<std::string_view> forced;
    if (env != nullptr && *env != '\0') forced = env;
#if defined(TALLY_KERNEL_PASSES)
    return Choice{choose_cpu_kernel_set(machine::cpu_features(), forced),
                  forced ? "forced by TALLY_CPU_KERNELS" : "chosen from CPU features"};
#else
    TALLY_CHECK(!forced || *forced == kBuildTarget, "TALLY_CPU_KERNELS=", *forced, ": this build was compiled with -march=native "
                "(TALLY_NATIVE=ON) and carries only its ", kBuildTarget, " kernels; configure with -DTALLY_NATIVE=OFF to choose");
    CpuKernelSet set = CpuKernelSet::Baseline;
    for (CpuKernelSet s : kSets)
      if (kernel_set_name(s) == kBuildTarget) set = s;
    return Choice{set, "built with -march=native"};
#endif
  }();
  return c;
}

}  // namespace

std::string_view kernel_set_name(CpuKernelSet set) {
  switch (set) {
    case CpuKernelSet::Baseline: return "baseline";
    case CpuKernelSet::Avx2: return "avx2";
    case CpuKernelSet::Avx512: return "avx512";
  }
  return "unknown";
}

CpuKernelSet best_cpu_kernel_set(const machine::CpuInfo& cpu) {
  if (missing_features(cpu, CpuKernelSet::Avx512).empty()) return CpuKernelSet::Avx512;
  if (missing_features(cpu, CpuKernelSet::Avx2).empty()) return CpuKernelSet::Avx2;
  return CpuKernelSet::Baseline;
}

CpuKernelSet choose_cpu_kernel_set(const machine::CpuInfo& cpu, std::optional<std::string_view> forced) {
  const CpuKernelSet best = best_cpu_kernel_set(cpu);
  if (!forced) return best;
  for (CpuKernelSet set : kSets) {
    if (*forced != kernel_set_name(set)) continue;
    TALLY_CHECK(set <= best, "TALLY_CPU_KERNELS=", *forced, ": this CPU cannot run the ", *forced, " kernels (it lacks ",
                missing_features(cpu, set), "); the best it runs is ", kernel_set_name(best));
    return set;
  }
  TALLY_CHECK(false, "TALLY_CPU_KERNELS=", *forced, " is not a kernel set: expected avx512, avx2 or baseline (the best this CPU runs is ",
              kernel_set_name(best), ")");
  return best;
}

std::string_view cpu_kernel_set() { return kernel_set_name(choice().set); }

std::string_view cpu_kernel_set_reason() { return choice().reason; }

AnyKernel detail::select_kernel(KernelList primary, KernelList (*avx2)(), KernelList (*avx512)(), AnyKernel key) {
  const auto it = std::find(primary.begin(), primary.end(), key);
  TALLY_INTERNAL_ASSERT(it != primary.end(), "a kernel run through cpu_kernels() is missing from its file's TALLY_CPU_KERNELS list");
  KernelList chosen = primary;
  // Only the chosen set's table is asked for: its getter is code of that target.
  if (choice().set == CpuKernelSet::Avx512 && avx512 != nullptr) chosen = avx512();
  if (choice().set == CpuKernelSet::Avx2 && avx2 != nullptr) chosen = avx2();
  TALLY_INTERNAL_ASSERT(chosen.size() == primary.size(), "kernel tables of one file differ in length between targets");
  return chosen[static_cast<size_t>(it - primary.begin())];
}

void detail::unknown_kernel_dtype(Dtype d) {
  throw InternalError(tally::detail::str_cat("a CPU kernel was given dtype ", static_cast<int>(d), ", which it does not know"));
}

}  // namespace tally::kernels
