// `tally info`: what this machine is and what it promises, so every later figure (FLOP/s, MFU,
// bandwidth) can be read against it.

#include <fmt/core.h>

#include "cli/commands.h"
#include "cli/gpu.h"
#include "tally/cuda/runtime.h"
#include "tally/machine/cpu_info.h"
#include "tally/kernels/cpu/dispatch.h"
#include "tally/kernels/cpu/matmul.h"
#include "tally/kernels/cpu/parallel.h"
#include "tally/ops/attention.h"

namespace tally::cli {

namespace {

const char* yes_no(bool b) { return b ? "yes" : "no"; }

void run_info() {
  const auto& cpu = machine::cpu_info();
  fmt::print("tally {}\n\n", TALLY_VERSION);
  fmt::print("CPU\n");
  fmt::print("  model            {} ({}, family {:#x})\n", cpu.model_name, cpu.vendor, cpu.family);
  fmt::print("  usable cores     {} ({} thread{} per core as the OS reports it{})\n", cpu.usable_cores, cpu.threads_per_core,
             cpu.threads_per_core == 1 ? "" : "s", cpu.hypervisor ? "; under a hypervisor, whose vCPUs may share physical cores" : "");
  fmt::print("  clock            {:.2f} GHz, {}{}\n", cpu.clock_ghz, cpu.clock_source,
             cpu.clock_source.starts_with("rated") ? fmt::format("; {:.2f} GHz measured in this run", cpu.clock_ghz_now) : "");
  fmt::print("  AVX2/FMA/F16C    {} / {} / {}\n", yes_no(cpu.avx2), yes_no(cpu.fma), yes_no(cpu.f16c));
  fmt::print("  AVX-512F         {}{}\n", yes_no(cpu.avx512f),
             cpu.avx512f ? fmt::format(" ({}-bit FMA datapath)", cpu.fma_datapath_bits) : "");
  fmt::print("  AVX-512 BW/DQ/VL {} / {} / {}\n", yes_no(cpu.avx512bw), yes_no(cpu.avx512dq), yes_no(cpu.avx512vl));
  fmt::print("  AVX512_BF16      {}\n", yes_no(cpu.avx512_bf16));
  fmt::print("  AVX512_FP16      {}\n", yes_no(cpu.avx512_fp16));
  fmt::print("  AMX tile / bf16 / int8  {} / {} / {}\n", yes_no(cpu.amx_tile), yes_no(cpu.amx_bf16), yes_no(cpu.amx_int8));
  fmt::print("\nBuild\n");
  fmt::print("  type             {}\n", TALLY_BUILD_TYPE_STR);
  fmt::print("  compiler         {}\n", __VERSION__);
  fmt::print("  CUDA             {}\n", cuda::is_built() ? "built in" : "not built in (no CUDA toolkit when it was configured)");
  fmt::print("  kernels          {} ({})\n", kernels::cpu_kernel_set(), kernels::cpu_kernel_set_reason());
  fmt::print("  OpenMP threads   {}\n", kernels::num_threads());
  fmt::print("  matmul paths (chosen at run time for this CPU)\n");
  for (const auto& [dtype, path] : kernels::matmul_paths()) fmt::print("    {:<17} {}\n", dtype, path);
  fmt::print("  attention paths (scaled_dot_product_attention)\n");
  for (const auto& [dtype, path] : attention_paths()) fmt::print("    {:<17} {}\n", dtype, path);
  fmt::print("\nPromised peaks (cores x clock x FLOP/cycle; MFU is measured against these)\n");
  for (const auto& p : machine::promised_cpu_peaks(cpu))
    fmt::print("  {:<9} {:>9.1f} GFLOP/s   {}\n", p.dtype, p.flops_per_sec / 1e9, p.basis);
  print_gpu_info();
}

}  // namespace

void add_info_command(CLI::App& app) {
  auto* cmd = app.add_subcommand("info", "CPU features, cores, build configuration, promised peak FLOP/s, and the GPU");
  cmd->callback(run_info);
}

}  // namespace tally::cli
