#pragma once
// Registration of the subcommands, one file each.

#include <CLI/CLI.hpp>
#include <filesystem>
#include <string>

namespace tally::cli {

/// `tally info`: CPU features, cores, build configuration, promised peaks.
void add_info_command(CLI::App& app);

/// `tally bench peak|matmul`: measured peaks; matmul FLOPs, time, FLOP/s and MFU.
void add_bench_command(CLI::App& app);
/// `tally estimate`: napkin math (train-time, max-params, transformer, tensor), with --json.
void add_estimate_command(CLI::App& app);
/// `tally inspect FILE`: the tensors (name, dtype, shape, bytes), totals and metadata of a safetensors file.
void add_inspect_command(CLI::App& app);
/// `tally report RUN_DIR... [--out FILE]`: a training run's self-contained HTML report, or several runs compared.
void add_report_command(CLI::App& app);
/// Write the report of `run_dir` to `out` (default run_dir/report.html) atomically; returns its path.
/// The default path is written only when it is absent or a report tally wrote (refuse_foreign_report).
std::filesystem::path write_report(const std::string& run_dir, const std::string& out = "");
/// IOError when run_dir/report.html exists and is not a page tally wrote: a user's file there is
/// never written over. Checked by `tally train` before the run starts (Note [Refuse before writing]).
void refuse_foreign_report(const std::string& run_dir);
/// IOError when `path` exists: `command` writes over no file of the user's; `hint` says what to do.
void refuse_existing_output(const std::string& path, std::string_view command, std::string_view hint);
/// `tally sample RUN_DIR`: a trained model continues a prompt; the books of prefill and decode.
void add_sample_command(CLI::App& app);
/// `tally export RUN_DIR --out FILE`: a run's weights alone, in tally's or GPT-2's names.
void add_export_command(CLI::App& app);
/// `tally train`: the main job (tally/train): checkpoints, resume, progress, end-of-run accounting.
void add_train_command(CLI::App& app);

}  // namespace tally::cli
