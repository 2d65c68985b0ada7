// The choice of CPU kernel set (Note [CPU kernel dispatch] in tally/kernels/cpu/dispatch.h): by the
// CPU's features, described here as /proc/cpuinfo text so that any machine can be faked, and by
// TALLY_CPU_KERNELS, whose bad values are errors that name the value and what the CPU runs.

#include <gtest/gtest.h>

#include <cstdlib>
#include <string>

#include "tally/error/error.h"
#include "tally/kernels/cpu/dispatch.h"
#include "tally/machine/cpu_info.h"

namespace tally::kernels {
namespace {

machine::CpuInfo cpu_with(const std::string& flags) { return machine::parse_proc_cpuinfo("processor\t: 0\nflags\t\t: " + flags + "\n"); }

const std::string kV3 = "sse sse2 avx avx2 fma f16c";
const std::string kV4 = kV3 + " avx512f avx512bw avx512dq avx512vl";

std::string error_of(const machine::CpuInfo& cpu, std::string_view forced) {
  try {
    choose_cpu_kernel_set(cpu, forced);
  } catch (const ValueError& e) {
    return e.what();
  }
  return "";
}

TEST(KernelDispatch, PicksTheBestSetTheCpuHas) {
  EXPECT_EQ(best_cpu_kernel_set(cpu_with(kV4)), CpuKernelSet::Avx512);
  EXPECT_EQ(best_cpu_kernel_set(cpu_with(kV3)), CpuKernelSet::Avx2);
  EXPECT_EQ(best_cpu_kernel_set(cpu_with("sse sse2")), CpuKernelSet::Baseline);
  // x86-64-v4 needs all four AVX-512 parts; a CPU with F alone (Knights Landing) gets avx2.
  EXPECT_EQ(best_cpu_kernel_set(cpu_with(kV3 + " avx512f avx512bw avx512dq")), CpuKernelSet::Avx2);
  // x86-64-v3 needs FMA and F16C beside AVX2.
  EXPECT_EQ(best_cpu_kernel_set(cpu_with("avx avx2 f16c")), CpuKernelSet::Baseline);
  EXPECT_EQ(best_cpu_kernel_set(cpu_with("avx avx2 fma")), CpuKernelSet::Baseline);
  EXPECT_EQ(choose_cpu_kernel_set(cpu_with(kV4), std::nullopt), CpuKernelSet::Avx512);
}

TEST(KernelDispatch, ForcedSetsTheCpuRuns) {
  EXPECT_EQ(choose_cpu_kernel_set(cpu_with(kV4), "avx2"), CpuKernelSet::Avx2);
  EXPECT_EQ(choose_cpu_kernel_set(cpu_with(kV4), "baseline"), CpuKernelSet::Baseline);
  EXPECT_EQ(choose_cpu_kernel_set(cpu_with(kV3), "avx2"), CpuKernelSet::Avx2);
  EXPECT_EQ(choose_cpu_kernel_set(cpu_with(""), "baseline"), CpuKernelSet::Baseline);
  EXPECT_EQ(kernel_set_name(CpuKernelSet::Avx512), "avx512");
}

TEST(KernelDispatch, ForcingASetTheCpuLacksNamesItAndWhatIsMissing) {
  const std::string e = error_of(cpu_with(kV3), "avx512");
  EXPECT_NE(e.find("TALLY_CPU_KERNELS=avx512"), std::string::npos) << e;
  EXPECT_NE(e.find("avx512f avx512bw avx512dq avx512vl"), std::string::npos) << e;
  EXPECT_NE(e.find("the best it runs is avx2"), std::string::npos) << e;
  const std::string b = error_of(cpu_with("sse2 avx2"), "avx2");
  EXPECT_NE(b.find("lacks fma f16c"), std::string::npos) << b;
  EXPECT_NE(b.find("best it runs is baseline"), std::string::npos) << b;
}

TEST(KernelDispatch, UnknownNamesAreValueErrors) {
  for (const char* bad : {"sse9", "AVX512", "native", " avx2"}) {
    const std::string e = error_of(cpu_with(kV4), bad);
    EXPECT_NE(e.find(std::string("TALLY_CPU_KERNELS=") + bad + " is not a kernel set"), std::string::npos) << e;
    EXPECT_NE(e.find("expected avx512, avx2 or baseline"), std::string::npos) << e;
    EXPECT_NE(e.find("the best this CPU runs is avx512"), std::string::npos) << e;
  }
}

// The process's own choice agrees with its environment: scripts/test.sh runs the suite with each set.
TEST(KernelDispatch, ThisProcessRunsTheSetItWasGiven) {
  const char* env = std::getenv("TALLY_CPU_KERNELS");
  const std::string_view reason = cpu_kernel_set_reason();
  if (env != nullptr && *env != '\0') {
    EXPECT_EQ(cpu_kernel_set(), env);
    EXPECT_TRUE(reason == "forced by TALLY_CPU_KERNELS" || reason == "built with -march=native") << reason;
  } else if (reason != "built with -march=native") {
    EXPECT_EQ(reason, "chosen from CPU features");
    EXPECT_EQ(cpu_kernel_set(), kernel_set_name(best_cpu_kernel_set(machine::cpu_features())));
  }
}

}  // namespace
}  // namespace tally::kernels
