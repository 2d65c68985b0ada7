#pragma once
// Choosing the next token from a language model's logits: greedy, or drawn at a temperature from
// the top k tokens and the smallest set whose probability reaches top_p (nucleus sampling).

#include <cstdint>

#include "tally/core/generator.h"
#include "tally/core/tensor.h"

namespace tally::nn {

struct SamplingOptions {
  double temperature = 1.0;  ///< 0: greedy (the most likely token); otherwise logits / temperature
  int64_t top_k = 0;         ///< keep the k most likely tokens; 0 keeps all
  double top_p = 1.0;        ///< keep the fewest most likely tokens whose probabilities add up to top_p; 1 keeps all
  /// Raises ValueError naming the first field out of range.
  void validate() const;
};

/// One token per row of logits [b, V]: int64 [b, 1]. Tokens outside the top k, or past the
/// nucleus, get probability 0; the most likely token always stays. Draws from `gen`.
Tensor sample_next_token(const Tensor& logits, const SamplingOptions& options, Generator* gen = nullptr);

}  // namespace tally::nn
