#include "tally/train/summary.h"

#include <sys/resource.h>

#include "tally/core/allocator.h"
#include "tally/error/error.h"
#include "tally/kernels/cpu/dispatch.h"
#include "tally/kernels/cpu/matmul.h"
#include "tally/kernels/cpu/parallel.h"
#include "tally/machine/cpu_info.h"
#include "tally/machine/memory_limits.h"
#include "tally/machine/peak_probe.h"

namespace tally::train {

using nlohmann::json;

namespace {

/// The process's peak resident set (getrusage), in bytes.
int64_t peak_rss_bytes() {
  rusage u{};
  getrusage(RUSAGE_SELF, &u);
  return static_cast<int64_t>(u.ru_maxrss) * 1024;
}

/// The machine's roofs measured now, in this run (the machine is shared: figures from another
/// run are not comparable).
accounting::Roofline measure_roofline(int threads) {
  return {machine::measure_fma_peak_flops(threads, 0.3), machine::measure_stream_triad_bytes_per_sec(int64_t{64} << 20, threads)};
}

/// The dtype the run's products run in.
std::string_view product_dtype(const TrainConfig& c) {
  return c.precision == "fp32" ? "float32" : c.precision == "fp16" ? "float16" : "bfloat16";
}


/// summary.json's "precision": the run's precision, its loss scaler's end, and for a mixed-precision
/// run the same step's memory (meta-device runs) and time (measured now) against float32.
json precision_summary(const TrainConfig& config, std::optional<double> loss_scale, int64_t skipped_steps,
                       const StepPrediction& predicted, const accounting::Roofline& roofline,
                       const std::pair<Tensor, Tensor>& last_batch, const std::function<void(const std::string&)>& note) {
  json p = {{"name", config.precision}, {"skipped_steps", skipped_steps}};
  if (loss_scale) p["final_loss_scale"] = *loss_scale;
  if (config.precision == "fp32" || !last_batch.first.defined()) return p;
  note("timing float32 steps of the same model for the comparison (a few seconds)");
  TrainConfig fp32 = config, same = config;
  fp32.precision = "fp32";
  fp32.inject_inf_step = same.inject_inf_step = 0;
  const StepPrediction reference = predict_step(fp32, roofline);
  // Both timed the same way (fresh model, the run's last batch), one after the other.
  const StepTime this_step = measure_step(same, last_batch.first, last_batch.second);
  const StepTime fp32_step = measure_step(fp32, last_batch.first, last_batch.second);
  p["vs_float32"] = {
      {"memory",
       {{"peak", category_json(predicted.peak)},
        {"peak_total", predicted.peak_total},
        {"float32_peak", category_json(reference.peak)},
        {"float32_peak_total", reference.peak_total},
        {"note", "the memory tracker's peak by category over a step, on the meta device (a real step tracks the same bytes)"}}},
      {"step_time",
       {{"ledger_s", this_step.ledger_s},
        {"float32_ledger_s", fp32_step.ledger_s},
        {"wall_s", this_step.wall_s},
        {"float32_wall_s", fp32_step.wall_s},
        {"note", "medians of 3 steps on a fresh model and the run's last batch; ledger: the sum of the ops' times"}}}};
  return p;
}

}  // namespace

double model_flops_per_token(const nn::TransformerLM& model, const TrainConfig& c) {
  const int64_t positions = model.position_embedding ? model.position_embedding->weight.numel() : 0;
  return accounting::palm_flops_per_token(static_cast<double>(model.num_parameters() - positions), c.num_layers, c.d_model,
                                          c.context_length);
}

machine::ReferencePeak run_peak(const TrainConfig& c, int threads, std::optional<double> fma_roof) {
  const machine::CpuInfo cpu = kernels::detail::matmul_cpu_features();
  const std::string_view dtype = product_dtype(c);
  machine::MeasuredPeaks measured;
  if (fma_roof) {
    measured.float32_fma_flops = *fma_roof;
    if (dtype == "bfloat16" && cpu.amx_bf16) {
      try {
        measured.bf16_amx_flops = machine::measure_amx_bf16_peak_flops(threads, 0.3);
      } catch (const NotImplementedError&) {  // the kernel refused tile state: no measured figure
      }
    } else if (dtype == "bfloat16" && cpu.avx512_bf16) {
      measured.bf16_dot_flops = machine::measure_bf16_dot_peak_flops(threads, 0.3);
    }
  }
  machine::ReferencePeak peak = machine::peak_for_dtype(cpu, measured, dtype);
  peak.promised.flops_per_sec *= static_cast<double>(threads) / static_cast<double>(std::max(cpu.usable_cores, 1));
  return peak;
}

json run_summary(const TrainConfig& config, const RunRecord& r, accounting::FlopCounter& ledger, const StepProfile* profile,
                 const std::function<void(const std::string&)>& note) {
  // The run's high-water mark, read before the books' own measurements: the bandwidth probe's
  // three arrays alone would add 192 MiB that no step of the run ever held.
  const int64_t run_peak_rss = peak_rss_bytes();
  // What the resident set holds at the end of the steps: the allocator's live and cached blocks
  // (anonymous pages), the rest of the heap and the stacks, and the files mapped in.
  const machine::ProcessMemory process = machine::process_memory();
  const MemoryStats allocator = CpuAllocator::get().stats();

  // The books (docs/run_dir.md, summary.json). The run's ledger closes first: it would count the
  // meta-device step too.
  ledger.stop();
  const int threads = kernels::num_threads();
  note("measuring this machine's peaks and memory bandwidth for the summary (about a second)");
  const accounting::Roofline roofline = measure_roofline(threads);
  const machine::ReferencePeak peak = run_peak(config, threads, roofline.peak_flops_per_sec);
  const StepPrediction predicted = predict_step(config, roofline);
  const json precision_json =
      precision_summary(config, r.loss_scale, r.skipped_steps, predicted, roofline, r.last_batch, note);
  json profile_json = json::object();
  if (profile) {
    profile_json = {{"peak", category_json(profile->peak())},
                    {"peak_total", profile->peak_total()},
                    {"peak_reserved", profile->peak_reserved()},
                    {"ops", profile->ops_json(roofline)},
                    {"modules", profile->modules_json()},
                    {"memory_timeline", profile->timeline_json()},
                    {"other", profile->other_json()},
                    {"time_split", profile->time_split_json(roofline)}};
  }
  const double measured_step_s = r.step_times.empty() ? 0.0 : median(r.step_times);
  const int64_t steps_run = r.last_step - r.first_step + 1;
  const int64_t tokens_run = steps_run * r.tokens_per_step;
  auto per_token = [&](accounting::Phase p) { return tokens_run ? static_cast<double>(ledger.total_flops(p)) / static_cast<double>(tokens_run) : 0.0; };
  const double ledger_flops_per_step = static_cast<double>(predicted.forward_flops + predicted.backward_flops + predicted.optimizer_flops);
  auto utilisation = [&](double flops_per_step, double peak_flops) {
    return measured_step_s > 0 && peak_flops > 0 ? flops_per_step / measured_step_s / peak_flops : 0.0;
  };
  const auto& cpu = machine::cpu_info();
  json ops = profile_json.value("ops", json::array());
  json top = json::array();
  for (size_t i = 0; i < std::min<size_t>(5, ops.size()); ++i) top.push_back(ops[i]);
  return {
      {"tally_version", TALLY_VERSION},
      {"config", to_json(config)},
      {"machine",
       {{"cpu", cpu.model_name},
        {"threads", threads},
        {"kernel_set", std::string(kernels::cpu_kernel_set())},
        {"peak_dtype", peak.dtype},
        {"peak_instruction", peak.instruction},
        {"peak_flops_promised", r.promised_flops},
        {"clock_ghz", cpu.clock_ghz},
        {"clock_source", cpu.clock_source},
        {"peak_flops_measured", peak.measured_flops_per_sec},
        {"peak_bandwidth_measured", roofline.bytes_per_sec}}},
      {"run",
       {{"steps", r.last_step},
        {"steps_this_run", steps_run},
        {"tokens", r.tokens_seen},
        {"seconds", r.run_seconds},
        {"tokens_per_s", r.run_seconds > 0 ? static_cast<double>(tokens_run) / r.run_seconds : 0.0},
        {"steps_seconds", r.steps_seconds},
        {"step_tokens_per_s", r.steps_seconds > 0 ? static_cast<double>(tokens_run) / r.steps_seconds : 0.0},
        {"first_loss", r.first_loss},
        {"final_loss", r.last_loss},
        {"unigram_entropy", r.entropy},
        {"resumed_from_step", r.first_step - 1},
        {"interrupted", r.interrupted}}},
      {"parameters", r.parameters},
      {"data_parallel", r.data_parallel.is_null() ? json::object() : r.data_parallel},
      {"validation", r.validation.is_null() ? json::object() : r.validation},
      {"precision", precision_json},
      {"flops_per_token",
       {{"predicted",
         {{"forward", static_cast<double>(predicted.forward_flops) / static_cast<double>(r.tokens_per_step)},
          {"backward", static_cast<double>(predicted.backward_flops) / static_cast<double>(r.tokens_per_step)},
          {"optimizer", static_cast<double>(predicted.optimizer_flops) / static_cast<double>(r.tokens_per_step)}}},
        {"measured",
         {{"forward", per_token(accounting::Phase::Forward)},
          {"backward", per_token(accounting::Phase::Backward)},
          {"optimizer", per_token(accounting::Phase::Optimizer)}}}}},
      {"mfu",  // Note [MFU and HFU]
       {{"promised", utilisation(r.model_flops_per_step, r.promised_flops)},
        {"measured", utilisation(r.model_flops_per_step, peak.measured_flops_per_sec)},
        {"flops_per_token", r.model_flops_per_step / static_cast<double>(r.tokens_per_step)},
        {"formula", "6·N + 12·L·H·Q·T model FLOPs per token (PaLM; nanoGPT, llm.c), N the parameters less position embeddings"}}},
      {"hfu",
       {{"promised", utilisation(ledger_flops_per_step, r.promised_flops)},
        {"measured", utilisation(ledger_flops_per_step, peak.measured_flops_per_sec)},
        {"flops_per_token", ledger_flops_per_step / static_cast<double>(r.tokens_per_step)},
        {"formula", "every FLOP on the run's ledger: products, attention's recompute, elementwise ops, the optimizer"}}},
      {"step_time",
       {{"predicted_s", predicted.step_seconds},
        {"measured_s", measured_step_s},
        {"note", "predicted: each op of a meta-device step at its roof, max(FLOPs / measured peak, bytes / measured bandwidth); "
                 "measured: the median step after the first"}}},
      {"memory",
       {{"predicted", category_json(predicted.peak)},
        {"tracked_peak", profile_json.value("peak", json::object())},
        {"predicted_peak_total", predicted.peak_total},
        {"tracked_peak_total", profile_json.value("peak_total", int64_t{0})},
        {"tracked_peak_reserved", profile_json.value("peak_reserved", int64_t{0})},
        {"other", profile_json.value("other", json::object())},
        {"process_peak_rss", run_peak_rss},
        {"process_at_end",
         {{"rss", process.rss_bytes},
          {"anonymous", process.anonymous_bytes},
          {"files", process.file_bytes},
          {"tensors_live", allocator.total_allocated_bytes},
          {"allocator_cached", allocator.cached_bytes},
          {"allocator_reserved", allocator.reserved_bytes},
          {"note", "anonymous: the allocator's blocks as far as their pages were touched, the heap and the threads' stacks; "
                   "files: code, libraries and the mapped token data"}}}}},
      {"time_split", profile_json.value("time_split", json::object())},
      {"top_ops", top},
      {"ops", ops},
      {"modules", profile_json.value("modules", json::array())},
      {"memory_timeline", profile_json.value("memory_timeline", json::array())},
  };
}

}  // namespace tally::train
