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

#include <omp.h>

#include <chrono>
#include <cmath>
#include <filesystem>
#include <limits>
#include <memory>

#include "tally/accounting/flop_counter.h"
#include "tally/core/generator.h"
#include "tally/data/loader.h"
#include "tally/dist/grad_reducer.h"
#include "tally/dist/link_model.h"
#include "tally/dist/process_group.h"
#include "tally/dist/zero.h"
#include "tally/error/error.h"
#include "tally/io/checksum.h"
#include "tally/io/atomic_file.h"
#include "tally/io/dir_lock.h"
#include "tally/io/safetensors.h"
#include "tally/kernels/cpu/parallel.h"
#include "tally/nn/eval_mode.h"
#include "tally/ops/cost.h"
#include "tally/machine/cache_dir.h"
#include "tally/train/checkpoint.h"
#include "tally/train/export.h"
#include "tally/train/memory_check.h"
#include "tally/train/model_setup.h"
#include "tally/train/precision.h"
#include "tally/train/resume.h"
#include "tally/train/run_dir.h"
#include "tally/train/step_profile.h"
#include "tally/train/summary.h"

namespace tally::train {

namespace fs = std::filesystem;
using nlohmann::json;

json StepReport::to_json() const {
  json j = {{"step", step},       {"loss", loss},     {"lr", lr},         {"grad_norm", grad_norm},
            {"tokens", tokens},   {"step_s", step_s}, {"tokens_per_s", tokens_per_s},
            {"mfu", mfu},         {"hfu", hfu},       {"elapsed_s", elapsed_s}};
  if (loss_scale) j["loss_scale"] = *loss_scale;
  if (skipped) j["skipped"] = true;
  if (comm_s) j["comm_s"] = *comm_s;
  if (exposed_comm_s) j["exposed_comm_s"] = *exposed_comm_s;
  if (comm_predicted_s) j["comm_predicted_s"] = *comm_predicted_s;
  if (comm_bytes) j["comm_bytes"] = *comm_bytes;
  if (param_hash) j["param_hash"] = *param_hash;
  if (val_loss) j["val_loss"] = *val_loss;
  return j;
}

namespace {

using Clock = std::chrono::steady_clock;
double seconds_since(Clock::time_point t) { return std::chrono::duration<double>(Clock::now() - t).count(); }

/// "3, 9 and 12"
std::string list_text(const std::vector<int64_t>& v) {
  std::string s;
  for (size_t i = 0; i < v.size(); ++i) s += (i == 0 ? "" : i + 1 == v.size() ? " and " : ", ") + std::to_string(v[i]);
  return s;
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

// Note [Refuse before writing]
// Whatever can refuse a run — a bad config, a data file that does not fit the vocabulary, a run
// directory that holds another run, a resume with nothing to resume from or nothing left to do —
// is checked before the first byte is written, so that a refused command leaves the run
// directory exactly as it was: config.json, metrics.jsonl, summary.json and report.html are a
// finished run's record, and rewriting them from a run that never started loses it.

/// What train() reads and checks before it writes anything (Note [Refuse before writing]).
struct Preflight {
  std::optional<io::DirLock> lock;       ///< the run directory's, when it exists already
  std::optional<ResumePoint> from;       ///< with --resume: the checkpoint to continue from
  std::optional<data::TokenFile> tokens;  ///< the config's data file, checked; none: the built-in corpus
  double entropy = 0;                    ///< of the data file's tokens
  std::string corpus;                    ///< the built-in corpus's file, when the config names no data
  bool corpus_there = false;             ///< the run directory holds that corpus already
  std::optional<StateDict> init_weights;  ///< a new run's starting weights (init_from), checked against the model
};

/// The data's checks: every token in the vocabulary, more tokens than one context. Returns the
/// tokens' unigram entropy.
double check_data(const data::TokenFile& tokens, const TrainConfig& config) {
  const double entropy = check_tokens(tokens, config.vocab_size);
  TALLY_CHECK(tokens.size() > config.context_length, "data file ", tokens.path(), " has ", tokens.size(),
              " tokens: too few for context_length ", config.context_length);
  return entropy;
}

/// Phase 1: the checks and reads that may refuse the run, with the run directory locked so that
/// what they read stays so. Nothing is written.
Preflight preflight(const TrainConfig& config, bool resume, const TrainHooks& hooks, const CheckpointManager& checkpoints,
                    const dist::ProcessGroup& group) {
  config.validate();
  TALLY_CHECK(!config.out.empty(), "train: the config names no run directory (out)");
  const fs::path out = config.out;
  const bool leader = group.rank() == 0;  // Note [Rank 0 writes]
  Preflight p;
  // One run at a time in a run directory, locked before anything in it is read (a directory not
  // made yet is locked once made).
  std::error_code ec;
  if (leader && fs::is_directory(out, ec)) p.lock.emplace(out, "tally train");
  if (resume) {
    p.from = read_resume_point(checkpoints, out, config, [&](const std::string& s) {
      if (hooks.note) hooks.note(s);
    });
    if (p.from->step >= config.steps) return p;  // nothing to do: the caller returns before the next checks
  } else if (leader) {
    refuse_existing_run(out, checkpoints);
  }
  if (config.threads > 0) omp_set_num_threads(static_cast<int>(config.threads));
  else if (group.size() > 1) omp_set_num_threads(std::max(1, kernels::num_threads() / dist::local_world_size()));  // the cores shared
  if (hooks.check_memory) check_memory_fits(config, kernels::num_threads(), machine::memory_bounds(), dist::local_world_size());
  if (!config.data.empty()) {
    p.tokens = open_data_file(config);
    if (leader) p.entropy = check_data(*p.tokens, config);
    split_data(*p.tokens, config);  // each part long enough (the built-in corpus's, once written)
  } else if (leader) {
    p.corpus = builtin_corpus_file_bytes(config.corpus_bytes);
    p.corpus_there = corpus_in_place(out, p.corpus);
  }
  if (leader && !config.val_data.empty()) check_tokens(open_token_file(config.val_data, config.data_dtype), config.vocab_size);
  if (!config.init_from.empty() && !p.from) {
    p.init_weights = import_weights(io::SafetensorsReader::open(config.init_from).load_all());
    nn::TransformerLM shape(config.model(), TensorOptions().device(Device(kMeta)));
    load_weights(shape, *p.init_weights, config.init_from);  // names and shapes only: nothing is allocated
  }
  return p;
}

/// The model's generator, seeded; the default generator seeded beside it (dropout's, until the
/// model's own takes over).
Generator seeded_generators(const TrainConfig& config) {
  manual_seed(static_cast<uint64_t>(config.seed) + 2);
  return Generator(static_cast<uint64_t>(config.seed));
}

// Note [Rank 0 writes]
// Under mpirun every rank trains and rank 0 alone writes the run directory: it locks it, refuses
// another run's record, writes the corpus, config.json, metrics.jsonl, the checkpoints and the
// summary. The other ranks read what they need (the data, a checkpoint to resume) and wait for
// rank 0 at a barrier before reading a corpus it writes. Data parallelism keeps every rank's
// model and optimizer state equal (their gradients are summed before each update), so rank 0's
// checkpoint is the job's, and resuming with another number of ranks is resuming from it.
//
// Note [Global micro-batches]
// A step's batch is M = grad_accum_steps × ranks micro-batches of batch_size sequences, drawn as
// one batch of M·batch_size rows by the loader (so which sequences a step trains on depends on
// M and the seed, never on how M is split into ranks and micro-steps). Micro-step k of rank r
// takes micro-batch m = k·ranks + r; each micro-batch's loss is scaled by 1/M and the gradients
// are summed; the step's loss is the micro-batches' mean, summed in m order. With dropout and
// M > 1, micro-batch m's masks come from a generator state of its own, (seed, step, m): the same
// whichever rank draws them.

/// Under mpirun, the reducer that sums the ranks' gradients (Note [Buckets]); none in one process.
std::unique_ptr<dist::GradReducer> make_reducer(const TrainConfig& config, dist::ProcessGroup& group, const nn::Module& model) {
  if (group.size() == 1) return nullptr;
  return std::make_unique<dist::GradReducer>(
      model.parameters(), group,
      dist::ReducerOptions{.bucket_cap_bytes = static_cast<int64_t>(config.bucket_mb * (1 << 20)),
                           .mode = config.reduce == "ordered" ? dist::ReduceMode::Ordered : dist::ReduceMode::Fast});
}

/// One invocation of `tally train` after its preflight: the model and its optimizer, the run
/// directory's files, the steps, and the books. Each phase is one method.
class Run {
 public:
  Run(const TrainConfig& config, const TrainHooks& hooks, const CheckpointManager& checkpoints, Preflight pre, dist::ProcessGroup& group)
      : config_(config),
        hooks_(hooks),
        checkpoints_(checkpoints),
        out_(config.out),
        group_(group),
        leader_(group.rank() == 0),
        micro_batches_(config.grad_accum_steps * group.size()),
        pre_(std::move(pre)),
        init_(seeded_generators(config)),
        model_(config.model(), {}, &init_),
        precision_(config, model_),
        reducer_(make_reducer(config, group, model_)),
        zero_(reducer_ && config.zero == 1 ? std::make_unique<dist::ZeroShards>(model_.parameters(), *reducer_, group) : nullptr),
        optimizer_(make_optimizer(zero_ ? zero_->shards() : model_.parameters(), config)),
        schedule_(make_schedule(optimizer_, config)) {
    if (pre_.init_weights) load_weights(model_, *pre_.init_weights, config.init_from);
  }

  /// Phase 2: the run directory made and locked, its data in place, config.json and metrics.jsonl
  /// written (Note [Rank 0 writes]); with --resume, the state restored; the ranks' parameters made
  /// equal. Files a new run creates are removed again if it fails before its first step.
  void open_run_dir();
  /// Phase 4: steps until config.steps, or until hooks.stop is set; checkpoints between them.
  void train_steps();
  /// Phase 5: the books (summary.json), and the result. Right after train_steps: the books read
  /// the process's memory before their own measurements raise it.
  TrainResult finish();

 private:
  /// Phase 3 (--resume): the model, optimizer, schedule, loader and generators as the checkpoint
  /// left them (Note [Bit-exact resume]).
  void restore();
  /// Every rank resumed from the same step (each reads the checkpoints itself); DistError naming
  /// the rank and the file otherwise.
  void check_same_step_on_every_rank() const;
  /// One optimizer step: its micro-batches' forward and backward, the gradients summed over the
  /// ranks, the update, and its metrics line.
  StepReport step_once();
  /// What the ranks agree on after a step's micro-steps, from every rank's micro-batch losses and
  /// stop request, in one all-gather: the step's loss (its micro-batches' mean, summed in global
  /// order, Note [Global micro-batches]) and whether any rank was asked to stop (each rank's signal
  /// arrives when it does; all stop after the same step).
  struct StepAgreement {
    double loss;
    bool stop;
  };
  StepAgreement agree_on_step(const std::vector<float>& losses, bool stop_here) const;
  /// The parameters' hash, checked equal on every rank.
  std::string verified_param_hash(int64_t step) const;
  /// The mean loss over the validation data's first eval_batches batches (the same tokens every
  /// time), in eval mode, without gradients and off the run's ledger. Every rank computes it.
  double evaluate();
  /// A checkpoint of step `at` (Note [Bit-exact resume]), written by rank 0: the step's own, or
  /// with `best`, checkpoints/best.safetensors (Note [The best checkpoint]).
  void save(int64_t at, bool best = false);
  void note(const std::string& s) const {
    if (hooks_.note) hooks_.note(s);
  }

  const TrainConfig& config_;
  const TrainHooks& hooks_;
  const CheckpointManager& checkpoints_;
  const fs::path out_;
  dist::ProcessGroup& group_;
  const bool leader_;
  const int64_t micro_batches_;  // M (Note [Global micro-batches])
  Preflight pre_;
  Generator init_;  // the model's: it initialised the weights and then draws dropout's masks
  nn::TransformerLM model_;
  StepPrecision precision_;
  std::unique_ptr<dist::GradReducer> reducer_;  // under mpirun
  std::unique_ptr<dist::ZeroShards> zero_;      // under mpirun with zero 1
  optim::AdamW optimizer_;                      // over the model's parameters, or over zero_'s shards
  optim::WarmupCosineLR schedule_;
  dist::LinkModel link_;  // under mpirun: measured as the run starts
  CreatedFiles created_;
  std::optional<data::TokenLoader> loader_;
  std::optional<data::TokenFile> validation_;  // none: the run does not evaluate
  std::string validation_source_;
  double best_val_ = std::numeric_limits<double>::infinity(), last_val_ = std::numeric_limits<double>::quiet_NaN();
  double initial_val_ = std::numeric_limits<double>::quiet_NaN();
  int64_t best_val_step_ = 0;
  std::optional<MetricsFile> metrics_;

  int64_t step_ = 0;      // the last step done
  bool stop_agreed_ = false;  // some rank was asked to stop during the last step
  RunRecord record_;
  std::vector<double> comm_seconds_, exposed_seconds_;
  std::optional<accounting::FlopCounter> ledger_;  // every step's ops, from the first step on
  std::unique_ptr<StepProfile> profile_;
};

void Run::open_run_dir() {
  std::error_code ec;
  if (leader_) {
    if (pre_.from) created_.keep();
    created_.will_create(out_);
    fs::create_directories(out_, ec);
    TALLY_CHECK_TYPE(IOError, !ec, "cannot create run directory ", out_.string(), ": ", ec.message());
    if (!pre_.lock) {  // made just now: another run may have made it too, and started in it
      pre_.lock.emplace(out_, "tally train");
      refuse_existing_run(out_, checkpoints_);
    }
    if (const int64_t n = checkpoints_.remove_stale_temporaries(); n > 0)
      note("removed " + std::to_string(n) + " unfinished checkpoint file(s) of an interrupted save");
    if (!pre_.tokens) {
      created_.will_create(builtin_corpus_path(out_));
      pre_.tokens = write_builtin_corpus(out_, pre_.corpus, pre_.corpus_there);
      pre_.entropy = check_data(*pre_.tokens, config_);
    }
  }
  if (group_.size() > 1) group_.barrier()->wait();  // rank 0's corpus is whole
  if (!pre_.tokens) pre_.tokens = open_builtin_corpus(out_);
  DataSplit split = split_data(*pre_.tokens, config_);
  if (config_.eval_interval > 0) validation_ = split.validation, validation_source_ = split.validation_source;
  loader_.emplace(split.train, data::LoaderOptions{.batch_size = config_.batch_size * micro_batches_,
                                                    .context_length = config_.context_length,
                                                    .sampling = data::Sampling::Random,
                                                    .seed = static_cast<uint64_t>(config_.seed) + 1});  // check_tokens checked every id once
  if (pre_.from) restore();
  // Data parallelism starts from rank 0's parameters (PyTorch DDP's broadcast), and every rank
  // from the same step.
  if (group_.size() > 1) {
    check_same_step_on_every_rank();
    for (const Tensor& w : model_.parameters()) group_.broadcast(w, 0)->wait();
    link_ = dist::calibrate_link(group_, config_.reduce == "ordered", reducer_->largest_bucket_numel());
  }
  if (!leader_) return;
  created_.will_create(out_ / "config.json");
  created_.will_create(checkpoints_.dir());
  io::write_file_atomic(out_ / "config.json", to_json(config_).dump(2) + "\n");
  const fs::path metrics_path = out_ / "metrics.jsonl";
  if (step_ > 0) {
    if (const std::vector<int64_t> dropped = truncate_metrics(metrics_path, step_); !dropped.empty())
      note("metrics.jsonl: dropped " + std::to_string(dropped.size()) + " line(s) that do not parse (line " + list_text(dropped) +
           "), kept the rest");
  } else {
    created_.will_create(metrics_path);
    io::write_file_atomic(metrics_path, "");
  }
  metrics_.emplace(metrics_path, checkpoints_.dir());
}

void Run::check_same_step_on_every_rank() const {
  const Tensor mine = full({1}, step_, TensorOptions().dtype(kInt64)), all = empty({group_.size()}, TensorOptions().dtype(kInt64));
  group_.allgather(all, mine)->wait();
  for (int r = 0; r < group_.size(); ++r) {
    const int64_t theirs = all.data_ptr<int64_t>()[r];
    TALLY_CHECK_TYPE(DistError, theirs == step_, "rank ", r, " starts at step ", theirs, " and rank ", group_.rank(), " at step ", step_,
                     pre_.from ? " (from " + pre_.from->checkpoint.path.string() + ")" : std::string(" (a new run)"),
                     ": the ranks read different checkpoints (a file that fails its checksums on one rank's file system, or a "
                     "run directory not shared between machines); nothing was written");
  }
}

void Run::restore() {
  const Checkpoint& c = pre_.from->checkpoint;
  check_checkpoint_whole(c, model_);
  // The step's batch must be the one the checkpoint was trained with (Note [Global micro-batches]).
  const auto saved = c.metadata.find("tally.micro_batches");
  const int64_t saved_micro_batches = saved == c.metadata.end() ? 1 : std::stoll(saved->second);
  TALLY_CHECK(saved_micro_batches == micro_batches_, "checkpoint ", c.path.string(), " was trained with ", saved_micro_batches,
              " micro-batches per step (grad_accum_steps × ranks) and this run has ", micro_batches_, " (grad_accum_steps ",
              config_.grad_accum_steps, " × ", group_.size(), " ranks): set --grad-accum-steps so that the product is ",
              saved_micro_batches, ", and the run continues on the same batches");
  model_.load_state_dict(with_prefix_removed(c.tensors, "model."));
  const StateDict optimizer_state = with_prefix_removed(c.tensors, "optimizer.");
  TALLY_CHECK(optimizer_state.contains("param_groups.1.params") || optimizer_.param_groups().size() == 1, "checkpoint ", c.path.string(),
              " was trained with weight decay on every tensor (one parameter group, as tally trained before its decay groups): ",
              "resume it with --decay-all true");
  optimizer_.load_state_dict(zero_ ? zero_->shard(optimizer_state) : optimizer_state);  // Note [ZeRO-1]
  schedule_.load_state_dict(with_prefix_removed(c.tensors, "scheduler."));
  precision_.load_state_dict(with_prefix_removed(c.tensors, "precision."));
  try {
    const json& position = pre_.from->position;
    loader_->set_state({position.at("epoch").get<int64_t>(), position.at("index").get<int64_t>(), generator_from(position.at("generator"))});
    default_generator().set_state(generator_from(pre_.from->generators.at("default")));
    init_.set_state(generator_from(pre_.from->generators.at("model")));
  } catch (const json::exception& e) {
    throw ValueError("checkpoint " + c.path.string() + " has unreadable metadata: " + e.what());
  }
  step_ = pre_.from->step;
  record_.tokens_seen = pre_.from->tokens;
  if (const auto best = c.metadata.find("tally.best_val"); best != c.metadata.end() && best->second != "null") {
    const json b = json::parse(best->second);
    best_val_ = b.at("loss").get<double>();
    best_val_step_ = b.at("step").get<int64_t>();
  }
  note("resumed from " + c.path.string() + " at step " + std::to_string(step_));
}

// Note [The best checkpoint]
// With validation, the checkpoint of the step with the lowest validation loss so far is also kept
// as checkpoints/best.safetensors, written as every checkpoint is (atomically, with checksums) and
// never rotated out: the step files' names are what rotation and resume look for. Each checkpoint
// records the best so far ("tally.best_val"), so that a resumed run keeps comparing against it.

void Run::save(int64_t at, bool best) {
  // Every rank's shards of the optimizer's state, gathered (a collective: every rank takes part).
  const StateDict optimizer_state = zero_ ? zero_->consolidate(optimizer_.state_dict()) : optimizer_.state_dict();
  if (!leader_) return;  // Note [Rank 0 writes]
  StateDict all;
  for (const auto& [k, t] : model_.state_dict()) all.insert("model." + k, t);
  for (const auto& [k, t] : optimizer_state) all.insert("optimizer." + k, t);
  for (const auto& [k, t] : schedule_.state_dict()) all.insert("scheduler." + k, t);
  for (const auto& [k, t] : precision_.state_dict()) all.insert("precision." + k, t);
  check_state_finite(at, all, checkpoints_.dir());
  const data::LoaderState ls = loader_->state();
  const std::map<std::string, std::string> metadata = {
      {kFormatKey, kFormat},
      {"tally.step", std::to_string(at)},
      {"tally.tokens", std::to_string(record_.tokens_seen)},
      {"tally.config", to_json(config_).dump()},
      {"tally.data_position", json{{"epoch", ls.epoch}, {"index", ls.index}, {"generator", generator_json(ls.generator)}}.dump()},
      {"tally.generators",
       json{{"default", generator_json(default_generator().get_state())}, {"model", generator_json(init_.get_state())}}.dump()},
      {"tally.micro_batches", std::to_string(micro_batches_)},
      {"tally.world_size", std::to_string(group_.size())},
      {"tally.best_val", best_val_step_ > 0 ? json{{"loss", best_val_}, {"step", best_val_step_}}.dump() : "null"},
  };
  const fs::path path = best ? checkpoints_.save_best(all, metadata) : checkpoints_.save(at, all, metadata);
  note("saved " + path.string() + (best ? " (the best validation loss so far, " + json(best_val_).dump() + ")" : ""));
}

double Run::evaluate() {
  NoGradGuard no_grad;
  nn::EvalModeGuard eval(model_);
  const ops::OpObserverScope off_the_ledger(nullptr);  // the run's ledger holds the training steps alone
  data::TokenLoader batches(*validation_, data::LoaderOptions{.batch_size = config_.batch_size,
                                                              .context_length = config_.context_length,
                                                              .sampling = data::Sampling::Sequential});
  double sum = 0;
  int64_t rows = 0;
  for (int64_t i = 0; i < std::min(config_.eval_batches, batches.batches_per_epoch()); ++i) {
    auto [x, y] = batches.next();
    const Tensor loss = precision_.forward([&] { return model_.loss(x, y); });
    sum += static_cast<double>(loss.item<float>()) * static_cast<double>(x.size(0));
    rows += x.size(0);
  }
  return sum / static_cast<double>(rows);
}

Run::StepAgreement Run::agree_on_step(const std::vector<float>& losses, bool stop_here) const {
  const int64_t a = config_.grad_accum_steps, p = group_.size(), row = a + 1;  // a rank's row: its losses, then its stop flag
  std::vector<float> all(losses);
  all.push_back(stop_here ? 1.0f : 0.0f);
  if (p > 1) {
    Tensor mine = empty({row}), gathered = empty({row * p});
    std::copy(all.begin(), all.end(), mine.data_ptr<float>());
    group_.allgather(gathered, mine)->wait();
    all.assign(gathered.data_ptr<float>(), gathered.data_ptr<float>() + row * p);
  }
  const float* v = all.data();  // rank r's micro-step k at r·row + k holds micro-batch m = k·p + r
  StepAgreement agreed{0.0, false};
  for (int64_t m = 0; m < micro_batches_; ++m) agreed.loss += static_cast<double>(v[(m % p) * row + m / p]);
  agreed.loss /= static_cast<double>(micro_batches_);
  for (int64_t r = 0; r < p; ++r) agreed.stop = agreed.stop || v[r * row + a] > 0;
  return agreed;
}

std::string Run::verified_param_hash(int64_t step) const {
  io::Checksum hash;
  for (const Tensor& w : model_.parameters()) {
    const Tensor c = w.contiguous();
    hash.update(std::span(static_cast<const uint8_t*>(c.data_ptr()), static_cast<size_t>(c.nbytes())));
  }
  const uint64_t mine = hash.digest();
  if (group_.size() > 1) {
    Tensor all = empty({group_.size()}, TensorOptions().dtype(kInt64));
    Tensor own = empty({1}, TensorOptions().dtype(kInt64));
    own.data_ptr<int64_t>()[0] = static_cast<int64_t>(mine);
    group_.allgather(all, own)->wait();
    for (int r = 0; r < group_.size(); ++r) {
      const auto theirs = static_cast<uint64_t>(all.data_ptr<int64_t>()[r]);
      TALLY_CHECK_TYPE(DistError, theirs == mine, "after step ", step, " rank ", r, "'s parameters differ from rank ", group_.rank(),
                       "'s (hash ", io::checksum_text(theirs), " against ", io::checksum_text(mine), "): the replicas have diverged");
    }
  }
  return io::checksum_text(mine);
}

StepReport Run::step_once() {
  const int64_t step = ++step_;
  const bool profiled = step == std::min(record_.first_step + 2, config_.steps);
  if (profiled) profile_ = std::make_unique<StepProfile>();
  const int64_t flops_before = ledger_->total_flops();
  const auto t0 = Clock::now();
  auto [x, y] = loader_->next();  // the step's whole batch (Note [Global micro-batches])
  const int64_t b = config_.batch_size, a = config_.grad_accum_steps, p = group_.size();
  const double lr = optimizer_.param_groups()[0].options().get_lr();
  const std::optional<double> loss_scale = precision_.loss_scale();
  std::vector<float> losses;
  for (int64_t k = 0; k < a; ++k) {
    const int64_t m = k * p + group_.rank();
    const Tensor xm = x.narrow(0, m * b, b), ym = y.narrow(0, m * b, b);
    if (k == 0) record_.last_batch = {xm, ym};
    if (config_.dropout > 0 && micro_batches_ > 1)
      init_.set_state({static_cast<uint64_t>(config_.seed) + 3, static_cast<uint64_t>((step - 1) * micro_batches_ + m) << 36});
    if (reducer_) reducer_->prepare_for_backward(k == 0, k == a - 1);
    const Tensor loss = precision_.micro_step([&] { return model_.loss(xm, ym); }, 1.0 / static_cast<double>(micro_batches_));
    if (reducer_) reducer_->finalize_backward();
    losses.push_back(loss.item<float>());
  }
  if (zero_) zero_->before_step();
  const auto [grad_norm, stepped] =
      precision_.update(optimizer_, config_.grad_clip, step == config_.inject_inf_step, zero_ ? model_.parameters() : std::vector<Tensor>{});
  if (zero_) zero_->after_step();
  if (stepped) schedule_.step();  // a skipped step moves neither the optimizer's counts nor the schedule
  if (!stepped) {
    ++record_.skipped_steps;
    note("step " + std::to_string(step) + ": inf or NaN gradients at loss scale " + json(loss_scale.value_or(1.0)).dump() +
         ": optimizer step skipped, the scale backs off");
  }
  const StepAgreement agreed = agree_on_step(losses, hooks_.stop && hooks_.stop->load());
  stop_agreed_ = agreed.stop;
  const double loss_value = agreed.loss;
  check_step_finite(step, loss_value, grad_norm, stepped, checkpoints_.dir());
  const double step_s = seconds_since(t0);
  record_.steps_seconds += step_s;
  record_.tokens_seen += record_.tokens_per_step;
  if (step == record_.first_step) record_.first_loss = loss_value;
  record_.last_loss = loss_value;
  if (step > record_.first_step) record_.step_times.push_back(step_s);  // the first step of a process warms caches and pools
  const double step_flops = static_cast<double>(ledger_->total_flops() - flops_before) * static_cast<double>(p);  // every rank's
  if (profiled) profile_->finish();
  const double promised = record_.promised_flops;
  StepReport r{step, config_.steps, loss_value, lr, grad_norm, record_.tokens_seen, step_s,
               static_cast<double>(record_.tokens_per_step) / step_s, record_.model_flops_per_step / step_s / promised,
               step_flops / step_s / promised, 0.0, loss_scale, !stepped, {}, {}, {}, {}, {}, {}};
  if (reducer_) {
    const dist::CommStats& c = reducer_->step_stats();
    r.comm_s = c.comm_seconds;
    r.exposed_comm_s = c.exposed_seconds;
    r.comm_bytes = c.bytes_sent;
    r.comm_predicted_s = link_.seconds(c.collectives, c.bytes_sent);
    if (step > record_.first_step) {
      comm_seconds_.push_back(c.comm_seconds);
      exposed_seconds_.push_back(c.exposed_seconds);
    }
  }
  if (config_.verify_replicas) r.param_hash = verified_param_hash(step);
  return r;
}

void Run::train_steps() {
  // Every step goes on the run's ledger; one step (the third of this invocation, or its last if
  // shorter) is profiled in detail for the summary.
  record_.first_step = step_ + 1;
  record_.tokens_per_step = config_.batch_size * micro_batches_ * config_.context_length;
  // The job's peak: every rank's threads (Note [The run's peak]).
  record_.promised_flops = run_peak(config_, kernels::num_threads()).promised.flops_per_sec * group_.size();
  record_.model_flops_per_step = model_flops_per_token(model_, config_) * static_cast<double>(record_.tokens_per_step);
  record_.parameters = model_.num_parameters();
  record_.entropy = pre_.entropy;
  // A new run's starting point on the validation data, as nanoGPT evaluates at step 0: for
  // weights from --init-from, the loss they had where they came from.
  if (validation_ && step_ == 0) {
    initial_val_ = evaluate();
    note("validation loss of the starting weights: " + json(initial_val_).dump());
  }
  ledger_.emplace();
  const auto run_start = Clock::now();
  while (step_ < config_.steps) {
    StepReport r = step_once();
    const bool evaluates = validation_ && (step_ % config_.eval_interval == 0 || step_ == config_.steps);
    if (evaluates) r.val_loss = last_val_ = evaluate();
    r.elapsed_s = seconds_since(run_start);
    if (leader_) {
      metrics_->append(r.to_json().dump() + "\n");
      created_.keep();
    }
    if (hooks_.on_step) hooks_.on_step(r);
    // One process stops as soon as it is asked; ranks after the step they agreed on (step_once).
    record_.interrupted = stop_agreed_ || (group_.size() == 1 && hooks_.stop && hooks_.stop->load());
    // Note [The best checkpoint]: the step's own checkpoint records this step's loss if it is the best.
    const bool best = evaluates && last_val_ < best_val_;
    if (best) best_val_ = last_val_, best_val_step_ = step_;
    if (step_ % config_.checkpoint_interval == 0 || step_ == config_.steps || record_.interrupted) save(step_);
    if (best) save(step_, /*best=*/true);
    if (record_.interrupted) break;
  }
  record_.last_step = step_;
  record_.run_seconds = seconds_since(run_start);  // the steps, evaluations and saves, not the books
  if (validation_) {
    record_.validation = {{"data", validation_source_},
                          {"tokens", validation_->size()},
                          {"eval_interval", config_.eval_interval},
                          {"eval_batches", config_.eval_batches},
                          {"tokens_per_evaluation", std::min(config_.eval_batches * config_.batch_size,
                                                             (validation_->size() - 1) / config_.context_length) * config_.context_length}};
    if (!std::isnan(last_val_)) record_.validation["last_loss"] = last_val_;
    if (!std::isnan(initial_val_)) record_.validation["initial_loss"] = initial_val_;
    if (best_val_step_ > 0) record_.validation["best_loss"] = best_val_, record_.validation["best_step"] = best_val_step_,
                            record_.validation["best_checkpoint"] = (checkpoints_.dir() / CheckpointManager::kBestFileName).string();
  }
  record_.loss_scale = precision_.loss_scale();
  if (reducer_) {
    record_.data_parallel = {
        {"world_size", group_.size()},
        {"backend", group_.backend()},
        {"reduce", config_.reduce},
        {"zero", config_.zero},
        {"grad_accum_steps", config_.grad_accum_steps},
        {"micro_batches_per_step", micro_batches_},
        {"buckets", reducer_->buckets().size()},
        {"bytes_per_step", reducer_->step_stats().bytes_sent},  // every step's the same: the buckets' fixed collectives
        {"comm_s", comm_seconds_.empty() ? 0.0 : median(comm_seconds_)},
        {"exposed_comm_s", exposed_seconds_.empty() ? 0.0 : median(exposed_seconds_)},
        {"comm_predicted_s", link_.seconds(reducer_->step_stats().collectives, reducer_->step_stats().bytes_sent)},
        {"link", {{"latency_s", link_.latency_s}, {"bytes_per_s", link_.bytes_per_s}}},
        {"note", "rank 0's: bytes sent per step (the same are received) by the bandwidth-optimal count, 2·(p−1)/p·S for an "
                 "all-reduce of S bytes; comm: the collectives' own time; exposed: the part backward did not hide (medians); "
                 "predicted: the α-β model of the link measured as the run started, collectives × latency + bytes / bandwidth"}};
  }
}

TrainResult Run::finish() {
  if (!leader_) return {.first_step = record_.first_step, .last_step = step_, .interrupted = record_.interrupted, .summary = {}};
  json summary = run_summary(config_, record_, *ledger_, profile_.get(), [&](const std::string& s) { note(s); });
  io::write_file_atomic(out_ / "summary.json", summary.dump(1) + "\n");
  return {.first_step = record_.first_step, .last_step = step_, .interrupted = record_.interrupted, .summary = std::move(summary)};
}

}  // namespace

TrainResult train(const TrainConfig& config, bool resume, const TrainHooks& hooks) {
  const CheckpointManager checkpoints(fs::path(config.out) / "checkpoints", config.keep);
  dist::ProcessGroup& group = dist::world();
  Preflight pre = preflight(config, resume, hooks, checkpoints, group);
  if (pre.from && pre.from->step >= config.steps) {  // a finished run, or --steps at or below its step: its record stays
    return {.first_step = pre.from->step + 1, .last_step = pre.from->step, .nothing_to_do = true, .summary = {}};
  }
  Run run(config, hooks, checkpoints, std::move(pre), group);
  run.open_run_dir();
  run.train_steps();
  return run.finish();
}

}  // namespace tally::train
