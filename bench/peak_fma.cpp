// Float32 FMA peak on 1 core and on all usable cores, next to the promised peak it is measured
// against. Usage: peak_fma [seconds per measurement, default 0.5]
#include <cstdio>
#include <cstdlib>

#include "tally/machine/cpu_info.h"
#include "tally/machine/peak_probe.h"

int main(int argc, char** argv) {
  namespace machine = tally::machine;
  const double seconds = argc > 1 ? std::atof(argv[1]) : 0.5;
  const machine::CpuInfo& cpu = machine::cpu_info();
  const int cores = cpu.usable_cores;
  const double one = machine::measure_fma_peak_flops(1, seconds);
  const double all = machine::measure_fma_peak_flops(cores, seconds);
  const machine::PeakSpec promised = machine::promised_cpu_peaks(cpu).front();  // float32
  std::printf("fma_peak float32: 1 core %.1f GFLOP/s, %d cores %.1f GFLOP/s; promised %.1f GFLOP/s (%s)\n",
              one / 1e9, cores, all / 1e9, promised.flops_per_sec / 1e9, promised.basis.c_str());
  return 0;
}
