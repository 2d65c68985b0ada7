#pragma once
// `tally train`'s loop as a library: a GPT-style model on a token file (or the built-in corpus),
// AdamW with warm-up and cosine decay, gradient clipping, checkpoints every so many steps, and
// every step's figures written to metrics.jsonl. Note [Bit-exact resume] says what a checkpoint
// holds so that a resumed run computes exactly what the uninterrupted one would have.

#include <atomic>
#include <cstdint>
#include <functional>
#include <optional>
#include <nlohmann/json.hpp>
#include <string>

#include "tally/train/config.h"

namespace tally::train {

/// One step's figures, as metrics.jsonl records them (docs/run_dir.md).
struct StepReport {
  int64_t step = 0;
  int64_t steps = 0;  ///< the run's last step
  double loss = 0;
  double lr = 0;
  double grad_norm = 0;
  int64_t tokens = 0;  ///< tokens seen since step 1
  double step_s = 0;
  double tokens_per_s = 0;
  double mfu = 0;  ///< model FLOPs (PaLM's 6·N + 12·L·H·Q·T per token) per second over the run's promised peak
  double hfu = 0;  ///< every FLOP on the step's ledger per second over the same peak
  double elapsed_s = 0;
  std::optional<double> loss_scale;  ///< the step's loss scale (fp16)
  bool skipped = false;              ///< the loss scaler skipped the optimizer step (inf or NaN gradients)
  /// Under mpirun: this rank's gradient communication in the step (dist::CommStats).
  std::optional<double> comm_s, exposed_comm_s;
  std::optional<double> comm_predicted_s;  ///< comm_s as the link's α-β model predicts it (dist/link_model.h)
  std::optional<int64_t> comm_bytes;  ///< sent by this rank (the same are received)
  std::optional<std::string> param_hash;  ///< with verify_replicas: the parameters' XXH3-64 after the update
  std::optional<double> val_loss;         ///< on the steps that evaluate (eval_interval): the validation loss
  nlohmann::json to_json() const;
};

/// What the caller sees of a run while it goes.
struct TrainHooks {
  std::function<void(const StepReport&)> on_step;  ///< after each step
  std::function<void(const std::string&)> note;    ///< a line worth telling (resumed from, fell back, saved)
  /// Polled after each step: when set, the run saves a checkpoint and returns.
  const std::atomic<bool>* stop = nullptr;
  /// Refuse, before anything is allocated or written, a run whose predicted memory does not fit
  /// what the process may use (Note [Memory pre-check] in train/memory_check.h).
  bool check_memory = true;
};

/// How a run ended.
struct TrainResult {
  int64_t first_step = 0;  ///< the first step this invocation ran (1, or the resumed step + 1)
  int64_t last_step = 0;   ///< the last step completed
  bool interrupted = false;
  /// Resumed at or past config.steps: nothing trained, nothing in the run directory written (no
  /// summary). last_step is the checkpoint's step.
  bool nothing_to_do = false;
  nlohmann::json summary;  ///< summary.json's contents (docs/run_dir.md)
};

/// Run `config`, in this process or, under mpirun, as one rank of a data-parallel job
/// (dist::world(); rank 0 writes the run directory, every rank trains). With `resume`, start from the newest readable checkpoint in config.out: ValueError
/// when there is none (naming why each checkpoint there did not load), and nothing_to_do when it
/// is already at or past config.steps. Without `resume`, refuse an out directory that holds a run
/// (checkpoints, metrics or a summary). ValueError for a bad config or data file, naming the
/// problem; IOError for what the disk refuses. A refused run writes nothing (Note [Refuse before
/// writing] in trainer.cpp). A step with a non-finite loss (or, without a loss scaler, a non-finite
/// gradient it applied) raises ValueError before its checkpoint is saved.
TrainResult train(const TrainConfig& config, bool resume, const TrainHooks& hooks = {});

}  // namespace tally::train
