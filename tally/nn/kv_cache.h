#pragma once
// The keys and values incremental decoding keeps. A model that has run positions [0, n) holds,
// for each attention layer, those positions' keys and values; the next token's query attends to
// them, and only the new token goes through the network: decoding one token costs a pass over
// the weights and over the cache instead of a forward over the whole sequence.

#include <cstdint>
#include <utility>
#include <vector>

#include "tally/core/tensor.h"
#include "tally/core/tensor_options.h"

namespace tally::nn {

class KVCache {
 public:
  /// Room for `capacity` positions of `batch` sequences, per layer keys and values of
  /// [batch, num_heads, capacity, head_dim] each, allocated now and held as MemoryCategory::KVCache.
  KVCache(int64_t num_layers, int64_t batch, int64_t num_heads, int64_t capacity, int64_t head_dim, TensorOptions options = {});

  /// Positions held.
  int64_t length() const { return length_; }
  int64_t capacity() const { return capacity_; }
  int64_t batch() const { return batch_; }
  int64_t num_layers() const { return static_cast<int64_t>(keys_.size()); }
  /// What the cache holds in memory: 2 · layers · batch · heads · capacity · head_dim · element size.
  int64_t nbytes() const;

  /// Writes layer `layer`'s keys and values of the positions after length() (k and v:
  /// [batch, heads, T, head_dim]) and returns that layer's keys and values of every position up to
  /// them, [batch, heads, length() + T, head_dim], views of the cache. Raises ValueError when they
  /// do not fit or do not match the cache's shape.
  std::pair<Tensor, Tensor> append(int64_t layer, const Tensor& k, const Tensor& v);
  /// Counts `positions` more as held, once every layer has appended them.
  void advance(int64_t positions);
  /// Empties it (the memory stays allocated).
  void clear() { length_ = 0; }

 private:
  std::vector<Tensor> keys_, values_;
  int64_t batch_, capacity_, length_ = 0;
};

}  // namespace tally::nn
