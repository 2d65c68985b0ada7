#pragma once
// Batches of next-token prediction from a token file: x holds context_length tokens from some
// start, y the same window shifted by one (the lecture's get_batch). Random windows are drawn
// with tally's counter-based Generator, so a seed fixes them whatever the thread count, and a
// loader's state is a few integers a checkpoint stores to resume exactly.

#include <cstdint>
#include <optional>
#include <utility>

#include "tally/core/generator.h"
#include "tally/core/tensor.h"
#include "tally/data/token_file.h"

namespace tally::data {

/// A random batch: starts = randint(data.size() - context_length, {batch_size}, gen) (the default
/// generator when gen is null), then x[b] = data[starts[b] : starts[b] + context_length] and
/// y[b] = the same shifted by one; both int64 [batch_size, context_length]. ValueError when
/// context_length + 1 exceeds the file's tokens, and, with a vocab_size, for a token id outside
/// [0, vocab_size) in the batch.
std::pair<Tensor, Tensor> get_batch(const TokenFile& data, int64_t batch_size, int64_t context_length,
                                    Generator* gen = nullptr, std::optional<int64_t> vocab_size = std::nullopt);

/// How a TokenLoader picks windows.
enum class Sampling {
  Random,      ///< get_batch's random starts, from the loader's own Generator
  Sequential,  ///< windows 0, T, 2T, ... in order: each token is in x once per epoch
};

/// What a TokenLoader produces.
struct LoaderOptions {
  int64_t batch_size = 1;                            ///< B: rows of x and y
  int64_t context_length = 1;                        ///< T: tokens per row
  Sampling sampling = Sampling::Random;              ///< how windows are picked
  uint64_t seed = 0;                                 ///< seeds the Random sampling
  std::optional<int64_t> vocab_size = std::nullopt;  ///< when set, every token id must be below it
  bool drop_last = false;                            ///< Sequential: skip an epoch's last batch when it is short
};

/// Where a TokenLoader stands: every integer needed to produce the next batch exactly.
struct LoaderState {
  int64_t epoch = 0;           ///< Sequential: full passes made; Random: always 0
  int64_t index = 0;           ///< Sequential: the next window in this epoch; Random: batches drawn
  GeneratorState generator{};  ///< Random: the Generator's seed and counters used
  bool operator==(const LoaderState& o) const {
    return epoch == o.epoch && index == o.index && generator.seed == o.generator.seed &&
           generator.offset == o.generator.offset;
  }
};

/// Batches from one token file, in Random or Sequential order, with a resumable state.
class TokenLoader {
 public:
  /// ValueError for a batch size or context length below 1, a context that does not fit in the
  /// file, or (Sequential with drop_last) a file shorter than one whole batch.
  TokenLoader(TokenFile data, LoaderOptions options);

  /// The next (x, y), each int64 [batch_size, context_length] (Sequential's last batch of an
  /// epoch has fewer rows unless drop_last).
  std::pair<Tensor, Tensor> next();
  /// The position after the batches produced so far.
  LoaderState state() const;
  /// Resume from state(): the next batch is the one that followed when the state was taken.
  void set_state(const LoaderState& state);

  /// Sequential: windows in one epoch; window k is x = data[kT : kT + T], y = data[kT + 1 : kT + T + 1],
  /// so the tokens after the last whole window (fewer than T) are never in x.
  int64_t windows_per_epoch() const { return (data_.size() - 1) / options_.context_length; }
  /// Sequential: batches in one epoch.
  int64_t batches_per_epoch() const;
  /// The token file.
  const TokenFile& data() const { return data_; }
  /// The options it was made with.
  const LoaderOptions& options() const { return options_; }

 private:
  /// Sequential: no batch is left in the epoch from window `index` on (no whole one, under drop_last).
  bool epoch_done(int64_t index) const;
  TokenFile data_;
  LoaderOptions options_;
  Generator gen_;
  int64_t epoch_ = 0;
  int64_t index_ = 0;
};

}  // namespace tally::data
