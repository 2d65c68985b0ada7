#pragma once
// A run's books: the peaks its utilisation is measured against, and summary.json (docs/run_dir.md),
// the record `tally train` writes when its steps end.

#include <cstdint>
#include <functional>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "tally/accounting/flop_counter.h"
#include "tally/machine/reference_peak.h"
#include "tally/nn/transformer.h"
#include "tally/train/config.h"
#include "tally/train/step_profile.h"

namespace tally::train {

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
double model_flops_per_token(const nn::TransformerLM& model, const TrainConfig& c);

/// The run's reference peak (Note [The run's peak]): its promised rate scaled to `threads` of the
/// machine's cores; its measured rate, when `fma_roof` (the float32 FMA peak measured with
/// `threads`) is given, from that or from the bfloat16 instruction's own probe.
machine::ReferencePeak run_peak(const TrainConfig& c, int threads, std::optional<double> fma_roof = std::nullopt);

/// What a run measured while its steps went, for its summary.
struct RunRecord {
  int64_t first_step = 1;        ///< the first step this invocation ran
  int64_t last_step = 0;         ///< the last step completed
  int64_t tokens_seen = 0;       ///< since step 1
  int64_t tokens_per_step = 0;
  double run_seconds = 0;        ///< the steps and the saves between them
  double steps_seconds = 0;      ///< the steps alone
  std::vector<double> step_times;  ///< each step's after the first of this process (it warms caches and pools)
  double first_loss = 0, last_loss = 0;
  double entropy = 0;            ///< the data's unigram entropy (nats)
  bool interrupted = false;
  std::optional<double> loss_scale;  ///< the loss scaler's scale at the end (fp16)
  int64_t skipped_steps = 0;
  std::pair<Tensor, Tensor> last_batch;  ///< for the float32 comparison
  int64_t parameters = 0;
  double model_flops_per_step = 0;  ///< PaLM's (Note [MFU and HFU])
  double promised_flops = 0;        ///< the run's promised peak (Note [The run's peak]), every rank's
  nlohmann::json data_parallel;     ///< under mpirun: the ranks and their communication
  nlohmann::json validation;        ///< the validation data and losses (last, best), when the run has them
};

/// summary.json's contents. Call it as the steps end: it reads the process's memory first (the
/// books' own measurements would raise its high-water mark), then stops `ledger` (it would count
/// the meta-device step too), then measures the machine's roofs and predicts the step.
/// `profile`: the one step profiled in detail, if any.
nlohmann::json run_summary(const TrainConfig& config, const RunRecord& r, accounting::FlopCounter& ledger, const StepProfile* profile,
                           const std::function<void(const std::string&)>& note);

}  // namespace tally::train
