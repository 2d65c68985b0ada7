#include "tally/nn/kv_cache.h"

#include "tally/accounting/memory_tracker.h"
#include "tally/core/autograd_meta.h"
#include "tally/ops/creation.h"

namespace tally::nn {

KVCache::KVCache(int64_t num_layers, int64_t batch, int64_t num_heads, int64_t capacity, int64_t head_dim, TensorOptions options)
    : batch_(batch), capacity_(capacity) {
  TALLY_CHECK(num_layers > 0 && batch > 0 && num_heads > 0 && capacity > 0 && head_dim > 0,
              "KVCache: layers, batch, heads, capacity and head size must be positive, got ", num_layers, ", ", batch, ", ", num_heads,
              ", ", capacity, ", ", head_dim);
  for (int64_t l = 0; l < num_layers; ++l) {
    for (auto* list : {&keys_, &values_}) {
      Tensor t = empty({batch, num_heads, capacity, head_dim}, options);
      accounting::set_memory_category(t, MemoryCategory::KVCache);
      list->push_back(t);
    }
  }
}

int64_t KVCache::nbytes() const {
  int64_t n = 0;
  for (const auto* list : {&keys_, &values_})
    for (const Tensor& t : *list) n += t.nbytes();
  return n;
}

std::pair<Tensor, Tensor> KVCache::append(int64_t layer, const Tensor& k, const Tensor& v) {
  TALLY_CHECK(layer >= 0 && layer < num_layers(), "KVCache: layer ", layer, " of a cache of ", num_layers(), " layers");
  const Tensor& keys = keys_[static_cast<size_t>(layer)];
  const Tensor& values = values_[static_cast<size_t>(layer)];
  TALLY_CHECK(k.dim() == 4 && k.sizes() == v.sizes() && k.size(0) == batch_ && k.size(1) == keys.size(1) && k.size(3) == keys.size(3),
              "KVCache: keys ", k.sizes(), " and values ", v.sizes(), " do not match a cache of [batch, heads, positions, head size] = ",
              keys.sizes());
  const int64_t T = k.size(2);
  TALLY_CHECK(length_ + T <= capacity_, "KVCache: ", T, " more positions do not fit: it holds ", length_, " of ", capacity_);
  NoGradGuard no_grad;  // the cache is state, not part of a graph
  keys.narrow(2, length_, T).copy_(k);
  values.narrow(2, length_, T).copy_(v);
  return {keys.narrow(2, 0, length_ + T), values.narrow(2, 0, length_ + T)};
}

void KVCache::advance(int64_t positions) {
  TALLY_CHECK(positions >= 0 && length_ + positions <= capacity_, "KVCache: cannot advance by ", positions, " from ", length_, " of ",
              capacity_);
  length_ += positions;
}

}  // namespace tally::nn
