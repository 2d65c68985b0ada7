#include "tally/data/loader.h"

#include <algorithm>
#include <span>
#include <vector>

#include "tally/error/error.h"
#include "tally/ops/creation.h"
#include "tally/ops/random.h"

namespace tally::data {
namespace {

void check_sizes(const TokenFile& data, int64_t batch_size, int64_t context_length,
                 std::optional<int64_t> vocab_size, const char* who) {
  TALLY_CHECK(batch_size >= 1, who, ": batch_size must be at least 1, got ", batch_size);
  TALLY_CHECK(context_length >= 1, who, ": context_length must be at least 1, got ", context_length);
  TALLY_CHECK(context_length < data.size(), who, ": context_length + 1 = ", context_length + 1,
              " tokens (x and y shifted by one) do not fit in '", data.path(), "', which holds ", data.size(), " tokens");
  TALLY_CHECK(!vocab_size || *vocab_size >= 1, who, ": vocab_size must be at least 1, got ", *vocab_size);
}

/// Every id in the window data[start : start + window.size()] is in [0, vocab_size).
void check_vocab(const TokenFile& data, int64_t start, std::span<const int64_t> window, int64_t vocab_size) {
  for (size_t i = 0; i < window.size(); ++i)
    TALLY_CHECK(window[i] >= 0 && window[i] < vocab_size, "token id ", window[i], " at position ",
                start + static_cast<int64_t>(i), " of '", data.path(), "' is outside the vocabulary of size ",
                vocab_size, " (ids 0 to ", vocab_size - 1, ")");
}

/// Row b of x is data[starts[b] : starts[b] + T], row b of y the same shifted by one.
std::pair<Tensor, Tensor> windows(const TokenFile& data, std::span<const int64_t> starts, int64_t context_length,
                                  std::optional<int64_t> vocab_size) {
  const auto batch = static_cast<int64_t>(starts.size());
  Tensor x = empty({batch, context_length}, kInt64);  // [B, T]
  Tensor y = empty({batch, context_length}, kInt64);  // [B, T]
  int64_t* px = x.data_ptr<int64_t>();
  int64_t* py = y.data_ptr<int64_t>();
  std::vector<int64_t> window(static_cast<size_t>(context_length + 1));  // x's row and y's last token
  for (int64_t b = 0; b < batch; ++b) {
    data.gather(starts[b], window);
    if (vocab_size) check_vocab(data, starts[b], window, *vocab_size);
    std::copy(window.begin(), window.end() - 1, px + b * context_length);
    std::copy(window.begin() + 1, window.end(), py + b * context_length);
  }
  return {x, y};
}

}  // namespace

std::pair<Tensor, Tensor> get_batch(const TokenFile& data, int64_t batch_size, int64_t context_length, Generator* gen,
                                    std::optional<int64_t> vocab_size) {
  check_sizes(data, batch_size, context_length, vocab_size, "get_batch");
  const Tensor starts = randint(data.size() - context_length, {batch_size}, {}, gen);  // [B]
  return windows(data, {starts.data_ptr<int64_t>(), static_cast<size_t>(batch_size)}, context_length, vocab_size);
}

TokenLoader::TokenLoader(TokenFile data, LoaderOptions options)
    : data_(std::move(data)), options_(options), gen_(options.seed) {
  check_sizes(data_, options_.batch_size, options_.context_length, options_.vocab_size, "TokenLoader");
  TALLY_CHECK(options_.sampling != Sampling::Sequential || !options_.drop_last || batches_per_epoch() > 0,
              "TokenLoader: with drop_last, one batch of ", options_.batch_size, " windows of ", options_.context_length,
              " tokens needs ", options_.batch_size * options_.context_length + 1, " tokens, but '", data_.path(),
              "' holds ", data_.size());
}

int64_t TokenLoader::batches_per_epoch() const {
  const int64_t windows = windows_per_epoch(), batch = options_.batch_size;
  return options_.drop_last ? windows / batch : (windows + batch - 1) / batch;
}

bool TokenLoader::epoch_done(int64_t index) const {
  const int64_t left = windows_per_epoch() - index;
  return options_.drop_last ? left < options_.batch_size : left <= 0;
}

std::pair<Tensor, Tensor> TokenLoader::next() {
  const int64_t batch = options_.batch_size, context = options_.context_length;
  if (options_.sampling == Sampling::Random) {
    auto xy = get_batch(data_, batch, context, &gen_, options_.vocab_size);
    ++index_;
    return xy;
  }
  const int64_t rows = std::min(batch, windows_per_epoch() - index_);
  std::vector<int64_t> starts(static_cast<size_t>(rows));
  for (int64_t b = 0; b < rows; ++b) starts[static_cast<size_t>(b)] = (index_ + b) * context;
  auto xy = windows(data_, starts, context, options_.vocab_size);
  index_ += rows;
  if (epoch_done(index_)) {  // so that a state taken now already reads (next epoch, 0)
    ++epoch_;
    index_ = 0;
  }
  return xy;
}

LoaderState TokenLoader::state() const { return {epoch_, index_, gen_.get_state()}; }

void TokenLoader::set_state(const LoaderState& state) {
  TALLY_CHECK(state.epoch >= 0 && state.index >= 0, "TokenLoader::set_state: negative position (epoch ",
              state.epoch, ", index ", state.index, ")");
  TALLY_CHECK(options_.sampling == Sampling::Random || !epoch_done(state.index), "TokenLoader::set_state: index ", state.index, " is past the last batch of an epoch of ",
              windows_per_epoch(), " windows (batch_size ", options_.batch_size, ")");
  epoch_ = state.epoch;
  index_ = state.index;
  gen_.set_state(state.generator);
}

}  // namespace tally::data
