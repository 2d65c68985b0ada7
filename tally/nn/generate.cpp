// TransformerLM::generate: the prefill, then one position at a time over the KV cache.

#include <algorithm>

#include "tally/core/autograd_meta.h"
#include "tally/nn/eval_mode.h"
#include "tally/nn/transformer.h"
#include "tally/ops/join.h"

namespace tally::nn {

Tensor TransformerLM::generate(const Tensor& prompt, const GenerationOptions& options, Generator* gen) {
  options.sampling.validate();
  TALLY_CHECK(prompt.dim() == 2 && prompt.size(0) >= 1 && prompt.size(1) >= 1 && prompt.dtype() == kInt64,
              "TransformerLM::generate: expected a prompt of int64 token ids [b, T] with b, T >= 1, got ", dtype_name(prompt.dtype()),
              " ", prompt.sizes());
  TALLY_CHECK(options.max_new_tokens >= 0, "TransformerLM::generate: max_new_tokens must be >= 0, got ", options.max_new_tokens);
  NoGradGuard no_grad;
  EvalModeGuard eval(*this);
  const int64_t context = config_.context_length, T0 = prompt.size(1);
  Tensor ids = prompt;
  if (options.max_new_tokens == 0) return ids;
  auto window = [&]() { return ids.size(1) <= context ? ids : ids.narrow(1, ids.size(1) - context, context); };
  auto last = [](const Tensor& logits) { return logits.select(1, logits.size(1) - 1); };
  // Room for every position this call runs at once: the window never holds more than that.
  std::optional<KVCache> cache;
  if (options.use_cache) cache.emplace(make_kv_cache(prompt.size(0), std::min(context, T0 + options.max_new_tokens - 1)));
  const Tensor prefill = options.use_cache ? forward(window(), *cache) : forward(window());
  if (options.on_prompt_logits) options.on_prompt_logits(prefill);
  Tensor logits = last(prefill);
  for (int64_t i = 0; i < options.max_new_tokens; ++i) {
    const Tensor next = sample_next_token(logits, options.sampling, gen);
    ids = cat({ids, next.to(ids.device())}, 1);
    if (options.on_token) options.on_token(i, next);
    if (i + 1 == options.max_new_tokens) break;
    if (!options.use_cache) {
      logits = last(forward(window()));
    } else if (cache->length() < cache->capacity()) {
      logits = last(forward(next, *cache));
    } else {  // the window is full: it slides, and its new first position changes every position after it
      cache->clear();
      logits = last(forward(window(), *cache));
    }
  }
  return ids;
}

}  // namespace tally::nn
