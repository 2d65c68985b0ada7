#pragma once
// Shared by einsum and rearrange: a permute that is skipped when it would not move anything, so
// the common already-ordered case records no view op at all.

#include <vector>

#include "tally/core/tensor.h"

namespace tally::einops::detail {

/// t.permute(perm), or t itself when perm is the identity.
inline Tensor permute_if_needed(const Tensor& t, const std::vector<int64_t>& perm) {
  for (size_t i = 0; i < perm.size(); ++i)
    if (perm[i] != static_cast<int64_t>(i)) return t.permute(perm);
  return t;
}

}  // namespace tally::einops::detail
