// Note [Bit-exact resume]
// A resumed run must compute exactly what the uninterrupted one would have, step for step, so a
// checkpoint holds every number the next step reads:
//   - the model's parameters and the AdamW state (exp_avg, exp_avg_sq, the step count);
//   - the schedule's step counter (the next learning rate follows from it);
//   - the loader's position: its Generator's seed and counters used (the next batch's starts);
//   - the states of the model's Generator (it initialised the weights and then draws dropout's
//     masks) and of the default one;
//   - the step and the tokens seen.
// Tensors are stored bit for bit (safetensors), counters as decimal text in the metadata. The
// rest is deterministic: tally's random numbers come from a counter-based generator, and a
// kernel's result depends only on its inputs, the thread count and the CPU kernel set — so a
// resumed run is bit-exact when those two match the first (the same machine and --threads).

#include "tally/train/trainer.h"

#include <fcntl.h>
#include <omp.h>
#include <sys/resource.h>
#include <unistd.h>

#include <cerrno>
#include <charconv>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "tally/accounting/estimate.h"
#include "tally/accounting/flop_counter.h"
#include "tally/core/generator.h"
#include "tally/data/loader.h"
#include "tally/error/error.h"
#include "tally/io/dir_lock.h"
#include "tally/io/retry.h"
#include "tally/io/write_all.h"
#include "tally/kernels/cpu/dispatch.h"
#include "tally/kernels/cpu/matmul.h"
#include "tally/kernels/cpu/parallel.h"
#include "tally/machine/cache_dir.h"
#include "tally/machine/cpu_info.h"
#include "tally/machine/device_specs.h"
#include "tally/machine/peak_probe.h"
#include "tally/machine/reference_peak.h"
#include "tally/train/checkpoint.h"
#include "tally/train/corpus.h"
#include "tally/train/memory_check.h"
#include "tally/train/model_setup.h"
#include "tally/train/precision.h"
#include "tally/train/step_profile.h"

namespace tally::train {

namespace fs = std::filesystem;
using nlohmann::json;

json StepReport::to_json() const {
  json j = {{"step", step},       {"loss", loss},     {"lr", lr},         {"grad_norm", grad_norm},
            {"tokens", tokens},   {"step_s", step_s}, {"tokens_per_s", tokens_per_s},
            {"mfu", mfu},         {"hfu", hfu},       {"elapsed_s", elapsed_s}};
  if (loss_scale) j["loss_scale"] = *loss_scale;
  if (skipped) j["skipped"] = true;
  return j;
}

namespace {

using Clock = std::chrono::steady_clock;
double seconds_since(Clock::time_point t) { return std::chrono::duration<double>(Clock::now() - t).count(); }

/// The config's token file (raw, or .npy by its extension).
data::TokenFile open_data_file(const TrainConfig& c) {
  TALLY_CHECK_TYPE(IOError, fs::exists(c.data), "data file ", c.data, " does not exist");
  if (c.data.ends_with(".npy")) return data::TokenFile::open_npy(c.data);
  return data::TokenFile::open_raw(c.data, data::token_dtype_from_name(c.data_dtype));
}

/// The built-in corpus of `corpus_bytes` as the bytes of its file: little-endian uint16 tokens, one
/// per byte of text.
std::string builtin_corpus_file_bytes(int64_t corpus_bytes) {
  const std::string text = builtin_corpus(corpus_bytes);
  std::string bytes(text.size() * 2, '\0');
  for (size_t i = 0; i < text.size(); ++i) bytes[2 * i] = text[i];
  return bytes;
}

/// Whether `path` holds exactly `bytes`.
bool file_holds(const fs::path& path, const std::string& bytes) {
  std::error_code ec;
  if (!fs::is_regular_file(path, ec) || fs::file_size(path, ec) != bytes.size() || ec) return false;
  std::ifstream in(path, std::ios::binary);
  std::string chunk(std::min<size_t>(bytes.size(), size_t{1} << 20), '\0');
  for (size_t at = 0; at < bytes.size(); at += chunk.size()) {
    const size_t n = std::min(chunk.size(), bytes.size() - at);
    if (!in.read(chunk.data(), static_cast<std::streamsize>(n)) || bytes.compare(at, n, chunk, 0, n) != 0) return false;
  }
  return true;
}

/// Whether the run directory's corpus.u16 already holds `corpus`, this config's built-in corpus.
/// A built-in corpus of another size (left by a run killed before its first step) is the run's own
/// to write over; anything else there is the user's, and a ValueError (Note [Refuse before writing]).
bool corpus_in_place(const fs::path& out, const std::string& corpus) {
  const fs::path path = out / "corpus.u16";
  std::error_code ec;
  if (!fs::exists(fs::symlink_status(path, ec))) return false;
  if (file_holds(path, corpus)) return true;
  const auto held = fs::is_regular_file(path, ec) ? fs::file_size(path, ec) : 0;
  if (!ec && held > 0 && held % 2 == 0 && held / 2 <= 1'000'000'000 &&
      file_holds(path, builtin_corpus_file_bytes(static_cast<int64_t>(held / 2))))
    return false;
  throw ValueError(detail::str_cat("run directory ", out.string(), " holds a corpus.u16 that is not a built-in corpus (this run writes one of ",
                                   corpus.size() / 2, " tokens there): tally does not write over it; move it, pass it as --data ",
                                   "(with --data-dtype uint16), or choose another --out"));
}

/// The built-in corpus in the run directory, written there unless corpus_in_place found it.
data::TokenFile write_builtin_corpus(const fs::path& out, const std::string& corpus, bool in_place) {
  const fs::path path = out / "corpus.u16";
  if (!in_place) machine::write_file_atomically(path, corpus);
  return data::TokenFile::open_raw(path.string(), data::TokenDtype::UInt16);
}

// Note [A failed start leaves nothing]
// A new run that fails before its first step is done (an out-of-memory error in that step, a
// disk that fills while the corpus is written) has no record worth keeping: a config.json, an
// empty metrics.jsonl and a corpus in a directory that never saw a step only make the next
// `tally train --out` there refuse. So every file and folder a new run creates is noted, and
// removed again if an error leaves train() before the first step's metrics line is written.
// A resumed run keeps everything: its files are the run's record.

/// The files a new run created, removed again unless kept (Note [A failed start leaves nothing]).
class CreatedFiles {
 public:
  CreatedFiles() : errors_before_(std::uncaught_exceptions()) {}
  ~CreatedFiles() {
    if (kept_ || std::uncaught_exceptions() == errors_before_) return;
    std::error_code ec;
    for (auto it = paths_.rbegin(); it != paths_.rend(); ++it) fs::remove(*it, ec);  // a folder only if it is empty
  }
  CreatedFiles(const CreatedFiles&) = delete;
  CreatedFiles& operator=(const CreatedFiles&) = delete;
  /// Note `path` if it does not exist yet: call before creating it.
  void will_create(const fs::path& path) {
    std::error_code ec;
    if (!kept_ && !fs::exists(fs::symlink_status(path, ec))) paths_.push_back(path);
  }
  /// The run has a record: keep everything from now on.
  void keep() { kept_ = true; }

 private:
  int errors_before_;
  bool kept_ = false;
  std::vector<fs::path> paths_;
};

/// Checks every token is a class of the model and returns the tokens' unigram entropy (nats).
double check_tokens(const data::TokenFile& file, int64_t vocab_size) {
  std::vector<int64_t> counts(static_cast<size_t>(std::min<int64_t>(vocab_size, int64_t{1} << 24)));
  std::vector<int64_t> chunk(1 << 16);
  for (int64_t start = 0; start < file.size(); start += static_cast<int64_t>(chunk.size())) {
    const int64_t n = std::min<int64_t>(static_cast<int64_t>(chunk.size()), file.size() - start);
    file.gather(start, std::span<int64_t>(chunk.data(), static_cast<size_t>(n)));
    for (int64_t i = 0; i < n; ++i) {
      const int64_t t = chunk[static_cast<size_t>(i)];
      TALLY_CHECK(t >= 0 && t < vocab_size, "data file ", file.path(), ": token ", t, " at position ", start + i,
                  " is outside the vocabulary [0, ", vocab_size, ")");
      if (t < static_cast<int64_t>(counts.size())) ++counts[static_cast<size_t>(t)];
    }
  }
  return unigram_entropy(counts);
}

/// A counter of the checkpoint's metadata, as save() writes it: decimal digits, nothing else, not
/// negative. A value that is not (an edited or damaged file) is refused rather than trusted: a
/// step of -5 or 0 would make the resumed run truncate metrics.jsonl to it and save over the
/// run's checkpoints.
int64_t parse_counter(const std::map<std::string, std::string>& m, const std::string& key, const fs::path& path) {
  const auto it = m.find(key);
  TALLY_CHECK(it != m.end(), "checkpoint ", path.string(), " has no '", key, "' in its metadata");
  const std::string& text = it->second;
  int64_t value = -1;
  const auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), value);
  TALLY_CHECK(!text.empty() && text[0] != '-' && ec == std::errc() && end == text.data() + text.size(), "checkpoint ",
              path.string(), ": metadata '", key, "' is '", text, "', not a non-negative integer (the file was altered or damaged)");
  return value;
}

GeneratorState generator_from(const json& j) { return {j.at("seed").get<uint64_t>(), j.at("offset").get<uint64_t>()}; }
json generator_json(const GeneratorState& s) { return {{"seed", s.seed}, {"offset", s.offset}}; }

/// Keep the metrics lines of steps up to `step` (a resumed run rewrites those after it). A line
/// that does not parse (cut short by a kill, or damaged) is dropped alone, not every line after
/// it; returns the numbers of the lines dropped so.
std::vector<int64_t> truncate_metrics(const fs::path& path, int64_t step) {
  std::vector<int64_t> unreadable;
  std::ifstream in(path);
  if (!in) return unreadable;
  std::string kept, line;
  for (int64_t line_no = 1; std::getline(in, line); ++line_no) {
    bool readable = false;
    try {
      const json at = json::parse(line).at("step");  // a step that is not a whole number from 1 is a damaged line
      readable = at.is_number_integer() && at.get<int64_t>() >= 1;
      if (readable && at.get<int64_t>() <= step) kept += line + "\n";
    } catch (const json::exception&) {
    }
    if (!readable) unreadable.push_back(line_no);
  }
  machine::write_file_atomically(path, kept);
  return unreadable;
}

/// metrics.jsonl, open for appending whole lines (unbuffered: a line is on disk, or in the page
/// cache, when append returns).
class MetricsFile {
 public:
  MetricsFile(fs::path path, fs::path checkpoint_dir) : path_(std::move(path)), checkpoint_dir_(std::move(checkpoint_dir)) {
    fd_ = io::retry_on_eintr([&] { return ::open(path_.c_str(), O_WRONLY | O_APPEND | O_CLOEXEC); });
    if (fd_ < 0) throw IOError("cannot open " + path_.string() + " for appending: " + std::strerror(errno));
  }
  MetricsFile(const MetricsFile&) = delete;
  MetricsFile& operator=(const MetricsFile&) = delete;
  ~MetricsFile() { ::close(fd_); }

  /// Append one step's line. A write that fails (a full disk, the file-size limit) stops the run:
  /// a record with steps missing, or half a line, is not written on. The part of the line that
  /// was written is cut off again, so that the file stays whole lines.
  void append(const std::string& line) {
    const off_t before = ::lseek(fd_, 0, SEEK_END);
    uint64_t written = 0;
    const int error = io::write_all(fd_, std::span(reinterpret_cast<const uint8_t*>(line.data()), line.size()), written);
    if (error == 0) return;
    if (before >= 0) (void)::ftruncate(fd_, before);
    throw IOError("cannot append to " + path_.string() + ": " + io::write_error_text(error) + ": the run stopped; the checkpoints in " +
                  checkpoint_dir_.string() + " are as they were and `--resume` continues from the newest");
  }

 private:
  fs::path path_, checkpoint_dir_;
  int fd_ = -1;
};

/// "3, 9 and 12"
std::string list_text(const std::vector<int64_t>& v) {
  std::string s;
  for (size_t i = 0; i < v.size(); ++i) s += (i == 0 ? "" : i + 1 == v.size() ? " and " : ", ") + std::to_string(v[i]);
  return s;
}

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

// Note [The run's peak]
// MFU compares the step's FLOP/s with the peak of the instruction its products run on, for the
// threads the run uses: a bf16 (or fp8, widened to bf16) run's against the bfloat16 peak (AMX or
// vdpbf16ps where oneDNN runs them), an fp32 or fp16 (widened) run's against float32 FMA's
// (machine::peak_for_dtype, the choice `tally bench matmul` makes). Against float32's, a bf16
// run's MFU read twice what it is on an AVX512_BF16 CPU.

// Note [MFU and HFU]
// Two utilisations, with the names the field gives them. MFU, model FLOPs utilisation, counts the
// FLOPs the model's maths needs by the PaLM paper's formula, 6·N + 12·L·H·Q·T per token
// (accounting::palm_flops_per_token), as nanoGPT, PaLM and llm.c report it: comparable across
// frameworks, whatever each runs beyond the maths. HFU, hardware FLOPs utilisation, counts every
// FLOP on the run's ledger: the products, attention with its backward's recompute of the
// scores, the elementwise ops and the optimizer's update. Both divide by the same peak (Note
// [The run's peak]); HFU is the higher.

/// PaLM's model FLOPs per token for the run's model (Note [MFU and HFU]).
double model_flops_per_token(const nn::TransformerLM& model, const TrainConfig& c) {
  const int64_t positions = model.position_embedding ? model.position_embedding->weight.numel() : 0;
  return accounting::palm_flops_per_token(static_cast<double>(model.num_parameters() - positions), c.num_layers, c.d_model,
                                          c.context_length);
}

/// The dtype the run's products run in.
std::string_view product_dtype(const TrainConfig& c) {
  return c.precision == "fp32" ? "float32" : c.precision == "fp16" ? "float16" : "bfloat16";
}

/// The run's reference peak (Note [The run's peak]): its promised rate scaled to `threads` of the
/// machine's cores; its measured rate, when `fma_roof` (the float32 FMA peak measured with
/// `threads`) is given, from that or from the bfloat16 instruction's own probe.
machine::ReferencePeak run_peak(const TrainConfig& c, int threads, std::optional<double> fma_roof = std::nullopt) {
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

// Note [Refuse before writing]
// Whatever can refuse a run — a bad config, a data file that does not fit the vocabulary, a run
// directory that holds another run, a resume with nothing to resume from or nothing left to do —
// is checked before the first byte is written, so that a refused command leaves the run
// directory exactly as it was: config.json, metrics.jsonl, summary.json and report.html are a
// finished run's record, and rewriting them from a run that never started loses it.

/// A checkpoint to resume from, read whole and checked against the config (Note [Bit-exact resume]).
struct ResumePoint {
  Checkpoint checkpoint;
  int64_t step = 0;
  int64_t tokens = 0;
  json position;    ///< the loader's state
  json generators;  ///< the default and the model's generators
};

/// The newest checkpoint of the run in `out` that reads and verifies. ValueError when there is none (naming the
/// directory, and why each checkpoint there did not load), when it is not a tally training
/// checkpoint, or when it was trained with another configuration.
ResumePoint read_resume_point(const CheckpointManager& checkpoints, const fs::path& out, const TrainConfig& config,
                              const std::function<void(const std::string&)>& note) {
  std::vector<std::string> notes;
  std::optional<Checkpoint> c = checkpoints.load_latest(notes);
  if (!c) {
    std::error_code ec;
    const std::string why = !fs::is_directory(out, ec)                ? "no such run directory"
                            : !fs::is_directory(checkpoints.dir(), ec) ? "it has no checkpoints folder"
                                                                       : checkpoints.dir().string() + " holds no checkpoint";
    if (notes.empty()) throw ValueError("cannot resume " + out.string() + ": " + why);
    std::string lines;
    for (const auto& n : notes) lines += "\n  " + n;
    throw ValueError("cannot resume " + out.string() + ": none of its checkpoints reads back whole and verifies (nothing was written):" + lines);
  }
  for (const auto& n : notes) note(n);
  const auto& m = c->metadata;
  TALLY_CHECK(m.contains(kFormatKey) && (m.at(kFormatKey) == kFormat || m.at(kFormatKey) == kFormatBeforeChecksums), "checkpoint ",
              c->path.string(), " is not a tally training checkpoint (metadata ", kFormatKey, " is neither ", kFormat, " nor ",
              kFormatBeforeChecksums, ")");
  ResumePoint r;
  json saved_config;
  auto json_of = [&](const std::string& key) {
    TALLY_CHECK(m.contains(key), "checkpoint ", c->path.string(), " has no '", key, "' in its metadata");
    try {
      return json::parse(m.at(key));
    } catch (const json::exception& e) {
      throw ValueError("checkpoint " + c->path.string() + " has unreadable metadata '" + key + "': " + e.what());
    }
  };
  saved_config = json_of("tally.config");
  r.position = json_of("tally.data_position");
  r.generators = json_of("tally.generators");
  const std::vector<std::string> mismatched = incompatible_fields(saved_config, config);
  if (!mismatched.empty()) {
    std::string lines;
    for (const auto& f : mismatched) lines += "\n  " + f;
    throw ValueError("checkpoint " + c->path.string() + " was trained with another configuration:" + lines);
  }
  r.step = parse_counter(m, "tally.step", c->path);
  r.tokens = parse_counter(m, "tally.tokens", c->path);
  TALLY_CHECK(r.step == c->step, "checkpoint ", c->path.string(), " is step ", c->step, "'s by its name but its metadata says step ",
              r.step, " (the file was altered or renamed): nothing was written; move it out of ", checkpoints.dir().string(),
              " to resume from the one before");
  r.checkpoint = std::move(*c);
  return r;
}

/// A new run (no --resume) must not start over another one's record: its checkpoints, or the
/// metrics and summary of a run that saved none.
void refuse_existing_run(const fs::path& out, const CheckpointManager& checkpoints) {
  TALLY_CHECK(checkpoints.list().empty(), "run directory ", out.string(),
              " already has checkpoints: pass --resume to continue it, or choose another --out");
  std::error_code ec;
  const auto metrics_bytes = fs::file_size(out / "metrics.jsonl", ec);
  const bool has_metrics = !ec && metrics_bytes > 0;  // an empty one is a run killed before its first step
  const bool has_summary = fs::exists(out / "summary.json", ec);
  TALLY_CHECK(!has_metrics && !has_summary, "run directory ", out.string(), " already holds a run (",
              has_metrics && has_summary ? "metrics.jsonl, summary.json" : has_metrics ? "metrics.jsonl" : "summary.json",
              ") but no checkpoint to resume it from: choose another --out, or remove those files to start over");
  // A config.json that reads as a tally config is a run's own, left by one killed before its first
  // step; anything else there is the user's.
  const fs::path config_path = out / "config.json";
  if (!fs::exists(fs::symlink_status(config_path, ec))) return;
  bool ours = true;
  try {
    TrainConfig c;
    overlay_json_file(c, config_path.string());
  } catch (const Error&) {
    ours = false;
  }
  TALLY_CHECK(ours, "run directory ", out.string(), " holds a config.json that is not a tally training config: a new run writes ",
              "its own there, and tally does not write over it; move it (pass it as --config if it is one), or choose another --out");
}

/// What a stop before saving says about the checkpoints: none was written or rotated out.
std::string nothing_saved(const fs::path& checkpoint_dir) {
  return ": stopped before saving a checkpoint, so those in " + checkpoint_dir.string() +
         " are as they were (lower --lr, or resume from an older checkpoint)";
}

/// A step whose loss is not finite, or whose update applied a non-finite gradient (no loss scaler
/// caught it), has made the weights garbage: stop before they are checkpointed, where each save
/// would rotate out one of the good checkpoints. fp16's loss scaler skips a step with inf or NaN
/// gradients (`stepped` false) by design; its loss is the unscaled one, finite unless the forward
/// itself broke.
void check_step_finite(int64_t step, double loss, double grad_norm, bool stepped, const fs::path& checkpoint_dir) {
  TALLY_CHECK(std::isfinite(loss), "step ", step, ": the loss is ", std::isnan(loss) ? "nan" : loss > 0 ? "inf" : "-inf",
              ": the model's weights or its inputs are no longer finite (training diverged, or the checkpoint resumed from holds NaN or inf)",
              nothing_saved(checkpoint_dir));
  TALLY_CHECK(!stepped || std::isfinite(grad_norm), "step ", step, ": the gradient norm is ", std::isnan(grad_norm) ? "nan" : "inf",
              " and the optimizer applied it: the weights are no longer finite", nothing_saved(checkpoint_dir));
}

/// Whether every element of a floating tensor is finite, read from memory by its bits: no op
/// runs, so the run's ledger does not see the check.
bool all_finite(const Tensor& t) {
  auto none_all_ones = [&]<class Bits>(Bits exponent) {
    const Tensor c = t.contiguous();
    const auto* p = static_cast<const Bits*>(c.data_ptr());
    for (int64_t i = 0, n = c.numel(); i < n; ++i)
      if ((p[i] & exponent) == exponent) return false;
    return true;
  };
  switch (t.dtype()) {
    case kFloat32: return none_all_ones(uint32_t{0x7F800000});
    case kFloat64: return none_all_ones(uint64_t{0x7FF0000000000000});
    case kBFloat16: return none_all_ones(uint16_t{0x7F80});
    case kFloat16: return none_all_ones(uint16_t{0x7C00});
    default: return !is_floating_point(t.dtype()) || all_finite(t.to(kFloat32));  // float8: exact in float32
  }
}

/// A checkpoint must not hold NaN or inf: a loss computed before the update can be finite while
/// the update made the weights garbage (a NaN in AdamW's state), and saving them would rotate out
/// the good checkpoints behind them.
void check_state_finite(int64_t step, const StateDict& state, const fs::path& checkpoint_dir) {
  for (const auto& [name, t] : state)
    TALLY_CHECK(all_finite(t), "step ", step, ": ", name, " holds NaN or inf after the optimizer's update", nothing_saved(checkpoint_dir));
}

/// What Module::load_state_dict and Optimizer::load_state_dict take, as torch's do, a resume
/// refuses: tally train writes every part of a run's state itself, so a key of no part, a model
/// tensor of another dtype (which the model would convert) or some parameters' optimizer state
/// missing (which the optimizer would restart) mean the file is not this run's checkpoint as it
/// was written, and the run would not continue bit-exactly (Note [Bit-exact resume]).
void check_checkpoint_whole(const Checkpoint& c, const nn::Module& model, const optim::Optimizer& optimizer) {
  const std::string file = c.path.string();
  for (const auto& [key, t] : c.tensors) {
    const bool known = key.starts_with("model.") || key.starts_with("optimizer.") || key.starts_with("scheduler.") || key.starts_with("precision.");
    TALLY_CHECK(known, "checkpoint ", file, " holds '", key, "', which is part of no run state (model., optimizer., scheduler. or precision.)");
  }
  for (const auto& [name, t] : model.state_dict()) {
    const Tensor* saved = c.tensors.find("model." + name);
    TALLY_CHECK_TYPE_ERROR(!saved || saved->dtype() == t.dtype(), "checkpoint ", file, ": 'model.", name, "' has dtype ",
                           dtype_name(saved ? saved->dtype() : t.dtype()), " where the model's is ", dtype_name(t.dtype()),
                           ": resuming would convert it");
  }
  // Every parameter has a gradient in every step, so each has optimizer state or none has (fp16
  // steps all skipped so far).
  int64_t params = 0, with_state = 0, missing = -1;
  for (const optim::OptimizerParamGroup& group : optimizer.param_groups()) {
    for (size_t k = 0; k < group.params().size(); ++k, ++params) {
      if (c.tensors.contains("optimizer.state." + std::to_string(params) + ".step")) ++with_state;
      else if (missing < 0) missing = params;
    }
  }
  TALLY_CHECK(with_state == 0 || with_state == params, "checkpoint ", file, " holds the optimizer state of ", with_state, " of its ",
              params, " parameters (parameter ", missing, "'s is missing): resuming would restart the missing ones");
}

}  // namespace

TrainResult train(const TrainConfig& config, bool resume, const TrainHooks& hooks) {
  config.validate();
  TALLY_CHECK(!config.out.empty(), "train: the config names no run directory (out)");
  auto note = [&](const std::string& s) {
    if (hooks.note) hooks.note(s);
  };
  // Nothing is written until every check has passed (Note [Refuse before writing]).
  const fs::path out = config.out;
  const CheckpointManager checkpoints(out / "checkpoints", config.keep);
  // One process at a time in a run directory, locked before anything in it is read, so that what
  // the checks below read stays so (a directory not made yet is locked once made).
  std::optional<io::DirLock> lock;
  std::error_code ec;
  if (fs::is_directory(out, ec)) lock.emplace(out, "tally train");
  std::optional<ResumePoint> from;
  if (resume) {
    from = read_resume_point(checkpoints, out, config, note);
    if (from->step >= config.steps) {  // a finished run, or --steps at or below its step: its record stays
      TrainResult done;
      done.first_step = from->step + 1;
      done.last_step = from->step;
      done.nothing_to_do = true;
      return done;
    }
  } else {
    refuse_existing_run(out, checkpoints);
  }
  if (config.threads > 0) omp_set_num_threads(static_cast<int>(config.threads));
  if (hooks.check_memory) check_memory_fits(config, kernels::num_threads(), machine::memory_bounds());

  std::optional<data::TokenFile> tokens;
  double entropy = 0;
  auto check_data = [&] {
    entropy = check_tokens(*tokens, config.vocab_size);
    TALLY_CHECK(tokens->size() > config.context_length, "data file ", tokens->path(), " has ", tokens->size(),
                " tokens: too few for context_length ", config.context_length);
  };
  std::string corpus;  // the built-in corpus's file, when the config names no data
  bool corpus_there = false;
  if (!config.data.empty()) {
    tokens = open_data_file(config);
    check_data();
  } else {
    corpus = builtin_corpus_file_bytes(config.corpus_bytes);
    corpus_there = corpus_in_place(out, corpus);
  }

  Generator init(static_cast<uint64_t>(config.seed));
  manual_seed(static_cast<uint64_t>(config.seed) + 2);
  nn::TransformerLM model(config.model(), {}, &init);
  StepPrecision precision(config, model);
  optim::AdamW optimizer = make_optimizer(model, config);
  optim::WarmupCosineLR schedule = make_schedule(optimizer, config);

  CreatedFiles created;
  if (from) created.keep();
  created.will_create(out);
  fs::create_directories(out, ec);
  TALLY_CHECK_TYPE(IOError, !ec, "cannot create run directory ", out.string(), ": ", ec.message());
  if (!lock) {  // made just now: another run may have made it too, and started in it
    lock.emplace(out, "tally train");
    refuse_existing_run(out, checkpoints);
  }
  if (const int64_t n = checkpoints.remove_stale_temporaries(); n > 0)
    note("removed " + std::to_string(n) + " unfinished checkpoint file(s) of an interrupted save");
  if (!tokens) {
    created.will_create(out / "corpus.u16");
    tokens = write_builtin_corpus(out, corpus, corpus_there);
    check_data();
  }
  data::TokenLoader loader(*tokens, {.batch_size = config.batch_size,
                                     .context_length = config.context_length,
                                     .sampling = data::Sampling::Random,
                                     .seed = static_cast<uint64_t>(config.seed) + 1});  // check_tokens checked every id once

  // Resume (Note [Bit-exact resume]).
  int64_t step = 0, tokens_seen = 0;
  if (from) {
    const Checkpoint& c = from->checkpoint;
    check_checkpoint_whole(c, model, optimizer);
    model.load_state_dict(with_prefix_removed(c.tensors, "model."));
    optimizer.load_state_dict(with_prefix_removed(c.tensors, "optimizer."));
    schedule.load_state_dict(with_prefix_removed(c.tensors, "scheduler."));
    precision.load_state_dict(with_prefix_removed(c.tensors, "precision."));
    try {
      const json& position = from->position;
      loader.set_state({position.at("epoch").get<int64_t>(), position.at("index").get<int64_t>(), generator_from(position.at("generator"))});
      default_generator().set_state(generator_from(from->generators.at("default")));
      init.set_state(generator_from(from->generators.at("model")));
    } catch (const json::exception& e) {
      throw ValueError("checkpoint " + c.path.string() + " has unreadable metadata: " + e.what());
    }
    step = from->step;
    tokens_seen = from->tokens;
    note("resumed from " + c.path.string() + " at step " + std::to_string(step));
  }
  created.will_create(out / "config.json");
  created.will_create(checkpoints.dir());
  machine::write_file_atomically(out / "config.json", to_json(config).dump(2) + "\n");
  const fs::path metrics_path = out / "metrics.jsonl";
  if (step > 0) {
    if (const std::vector<int64_t> dropped = truncate_metrics(metrics_path, step); !dropped.empty())
      note("metrics.jsonl: dropped " + std::to_string(dropped.size()) + " line(s) that do not parse (line " + list_text(dropped) +
           "), kept the rest");
  } else {
    created.will_create(metrics_path);
    machine::write_file_atomically(metrics_path, "");
  }
  MetricsFile metrics(metrics_path, checkpoints.dir());

  auto save = [&](int64_t at) {
    StateDict all;
    for (const auto& [k, t] : model.state_dict()) all.insert("model." + k, t);
    for (const auto& [k, t] : optimizer.state_dict()) all.insert("optimizer." + k, t);
    for (const auto& [k, t] : schedule.state_dict()) all.insert("scheduler." + k, t);
    for (const auto& [k, t] : precision.state_dict()) all.insert("precision." + k, t);
    check_state_finite(at, all, checkpoints.dir());
    const data::LoaderState ls = loader.state();
    const std::map<std::string, std::string> metadata = {
        {kFormatKey, kFormat},
        {"tally.step", std::to_string(at)},
        {"tally.tokens", std::to_string(tokens_seen)},
        {"tally.config", to_json(config).dump()},
        {"tally.data_position", json{{"epoch", ls.epoch}, {"index", ls.index}, {"generator", generator_json(ls.generator)}}.dump()},
        {"tally.generators",
         json{{"default", generator_json(default_generator().get_state())}, {"model", generator_json(init.get_state())}}.dump()},
    };
    const fs::path path = checkpoints.save(at, all, metadata);
    note("saved " + path.string());
  };

  // Every step goes on the run's ledger; one step (the third of this invocation, or its last if
  // shorter) is profiled in detail for the summary.
  const double promised = run_peak(config, kernels::num_threads()).promised.flops_per_sec;  // Note [The run's peak]
  const int64_t first = step + 1;
  const int64_t profiled = std::min(first + 2, config.steps);
  const int64_t tokens_per_step = config.batch_size * config.context_length;
  const double model_flops_per_step = model_flops_per_token(model, config) * static_cast<double>(tokens_per_step);
  accounting::FlopCounter ledger;
  std::vector<double> step_times;
  double first_loss = 0, last_loss = 0;
  double steps_seconds = 0;  // the steps alone, without the saves between them
  int64_t skipped_steps = 0;
  std::pair<Tensor, Tensor> last_batch;  // for the float32 comparison after the run
  bool interrupted = false;
  const auto run_start = Clock::now();
  std::unique_ptr<StepProfile> profile;

  while (step < config.steps) {
    ++step;
    if (step == profiled) profile = std::make_unique<StepProfile>();
    const int64_t flops_before = ledger.total_flops();
    const auto t0 = Clock::now();
    auto [x, y] = loader.next();
    last_batch = {x, y};
    const double lr = optimizer.param_groups()[0].options().get_lr();
    const std::optional<double> loss_scale = precision.loss_scale();
    const auto [loss, grad_norm, stepped] =
        precision.run([&] { return model.loss(x, y); }, optimizer, config.grad_clip, step == config.inject_inf_step);
    if (stepped) schedule.step();  // a skipped step moves neither the optimizer's counts nor the schedule
    if (!stepped) {
      ++skipped_steps;
      note("step " + std::to_string(step) + ": inf or NaN gradients at loss scale " + json(loss_scale.value_or(1.0)).dump() +
           ": optimizer step skipped, the scale backs off");
    }
    const double loss_value = static_cast<double>(loss.item<float>());
    check_step_finite(step, loss_value, grad_norm, stepped, checkpoints.dir());
    const double step_s = seconds_since(t0);
    steps_seconds += step_s;
    tokens_seen += tokens_per_step;
    if (step == first) first_loss = loss_value;
    last_loss = loss_value;
    if (step > first) step_times.push_back(step_s);  // the first step of a process warms caches and pools
    const double step_flops = static_cast<double>(ledger.total_flops() - flops_before);
    if (step == profiled) profile->finish();
    const StepReport r{step, config.steps, loss_value, lr, grad_norm, tokens_seen, step_s, tokens_per_step / step_s,
                       model_flops_per_step / step_s / promised, step_flops / step_s / promised, seconds_since(run_start),
                       loss_scale, !stepped};
    metrics.append(r.to_json().dump() + "\n");
    created.keep();
    if (hooks.on_step) hooks.on_step(r);
    interrupted = hooks.stop && hooks.stop->load();
    if (step % config.checkpoint_interval == 0 || step == config.steps || interrupted) save(step);
    if (interrupted) break;
  }

  const double run_seconds = seconds_since(run_start);  // the steps and saves, not the books below
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
      precision_summary(config, precision.loss_scale(), skipped_steps, predicted, roofline, last_batch, note);
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
  const double measured_step_s = step_times.empty() ? 0.0 : median(step_times);
  const int64_t steps_run = step - first + 1;
  const int64_t tokens_run = steps_run * tokens_per_step;
  auto per_token = [&](accounting::Phase p) { return tokens_run ? static_cast<double>(ledger.total_flops(p)) / static_cast<double>(tokens_run) : 0.0; };
  const double ledger_flops_per_step = static_cast<double>(predicted.forward_flops + predicted.backward_flops + predicted.optimizer_flops);
  auto utilisation = [&](double flops_per_step, double peak_flops) {
    return measured_step_s > 0 && peak_flops > 0 ? flops_per_step / measured_step_s / peak_flops : 0.0;
  };
  const auto& cpu = machine::cpu_info();
  json ops = profile_json.value("ops", json::array());
  json top = json::array();
  for (size_t i = 0; i < std::min<size_t>(5, ops.size()); ++i) top.push_back(ops[i]);
  json summary = {
      {"tally_version", TALLY_VERSION},
      {"config", to_json(config)},
      {"machine",
       {{"cpu", cpu.model_name},
        {"threads", threads},
        {"kernel_set", std::string(kernels::cpu_kernel_set())},
        {"peak_dtype", peak.dtype},
        {"peak_instruction", peak.instruction},
        {"peak_flops_promised", promised},
        {"clock_ghz", cpu.clock_ghz},
        {"clock_source", cpu.clock_source},
        {"peak_flops_measured", peak.measured_flops_per_sec},
        {"peak_bandwidth_measured", roofline.bytes_per_sec}}},
      {"run",
       {{"steps", step},
        {"steps_this_run", steps_run},
        {"tokens", tokens_seen},
        {"seconds", run_seconds},
        {"tokens_per_s", run_seconds > 0 ? static_cast<double>(tokens_run) / run_seconds : 0.0},
        {"steps_seconds", steps_seconds},
        {"step_tokens_per_s", steps_seconds > 0 ? static_cast<double>(tokens_run) / steps_seconds : 0.0},
        {"first_loss", first_loss},
        {"final_loss", last_loss},
        {"unigram_entropy", entropy},
        {"resumed_from_step", first - 1},
        {"interrupted", interrupted}}},
      {"parameters", model.num_parameters()},
      {"precision", precision_json},
      {"flops_per_token",
       {{"predicted",
         {{"forward", static_cast<double>(predicted.forward_flops) / static_cast<double>(tokens_per_step)},
          {"backward", static_cast<double>(predicted.backward_flops) / static_cast<double>(tokens_per_step)},
          {"optimizer", static_cast<double>(predicted.optimizer_flops) / static_cast<double>(tokens_per_step)}}},
        {"measured",
         {{"forward", per_token(accounting::Phase::Forward)},
          {"backward", per_token(accounting::Phase::Backward)},
          {"optimizer", per_token(accounting::Phase::Optimizer)}}}}},
      {"mfu",  // Note [MFU and HFU]
       {{"promised", utilisation(model_flops_per_step, promised)},
        {"measured", utilisation(model_flops_per_step, peak.measured_flops_per_sec)},
        {"flops_per_token", model_flops_per_step / static_cast<double>(tokens_per_step)},
        {"formula", "6·N + 12·L·H·Q·T model FLOPs per token (PaLM; nanoGPT, llm.c), N the parameters less position embeddings"}}},
      {"hfu",
       {{"promised", utilisation(ledger_flops_per_step, promised)},
        {"measured", utilisation(ledger_flops_per_step, peak.measured_flops_per_sec)},
        {"flops_per_token", ledger_flops_per_step / static_cast<double>(tokens_per_step)},
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
  machine::write_file_atomically(out / "summary.json", summary.dump(1) + "\n");
  return {.first_step = first, .last_step = step, .interrupted = interrupted, .summary = std::move(summary)};
}

}  // namespace tally::train
