#pragma once
// `tally sample`'s job as a library: a trained model continues a prompt, and the decoding is put
// on the books — the prefill (the prompt, one forward over all its positions, compute-bound)
// against the decode (one position per step over the KV cache, which at a small batch reads every
// weight for a few FLOPs each: memory-bound), with the bytes/s the decode achieved against the
// machine's measured bandwidth, the lecture's napkin math applied to inference.

#include <cstdint>
#include <functional>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "tally/nn/sampling.h"
#include "tally/train/trained_model.h"

namespace tally::train {

struct SampleOptions {
  std::string prompt = "\n";          ///< text, its bytes the token ids (a byte-level model)
  std::vector<int64_t> prompt_ids;    ///< the prompt as token ids instead, for other vocabularies
  int64_t max_new_tokens = 200;
  nn::SamplingOptions sampling{0.8, 0, 1.0};
  uint64_t seed = 0;
  int64_t num_samples = 1;  ///< sequences decoded together, as one batch
  bool measure_machine = true;  ///< measure the bandwidth and FMA peak for the roofline verdict (about a second)
  bool keep_prompt_logits = false;  ///< keep the prompt's logits (SampleResult::prompt_logits)
};

struct SampleResult {
  Tensor ids;                ///< [num_samples, prompt + new], int64
  int64_t prompt_tokens = 0;
  nlohmann::json books;      ///< prefill and decode: FLOPs, bytes, seconds, tokens/s; the cache; the bound
  Tensor prompt_logits;      ///< [T, vocab] float32, the prompt's positions (with keep_prompt_logits)
};

/// The prompt's token ids: prompt_ids, or the prompt's bytes. ValueError naming the offending
/// id and the vocabulary when one does not fit the model, and when the prompt is empty.
std::vector<int64_t> prompt_tokens(const SampleOptions& options, int64_t vocab_size);

/// Continues the prompt num_samples times with `trained`'s model and keeps the books.
/// `on_token(i, ids [num_samples, 1])` is called as each new token is chosen.
SampleResult sample(const TrainedModel& trained, const SampleOptions& options,
                    const std::function<void(int64_t, const Tensor&)>& on_token = {});

/// The text of a byte-level model's tokens (vocabulary ≤ 256: each id a byte; bytes that are not
/// well-formed UTF-8, and control characters but newline and tab, as U+FFFD), or the ids separated
/// by spaces. Always valid UTF-8.
std::string tokens_text(const std::vector<int64_t>& ids, int64_t vocab_size);
/// The same for a tensor of ids, flattened.
std::string tokens_text(const Tensor& ids, int64_t vocab_size);

}  // namespace tally::train
