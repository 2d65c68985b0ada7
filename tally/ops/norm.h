#pragma once
// Vector norms (torch.linalg.vector_norm, Tensor.norm), composed of ops: the ledger sees each
// pass, and autograd takes each pass's rule, with PyTorch's zero gradient where the norm is 0.

#include "tally/core/tensor.h"

namespace tally::linalg {

/// (Σ |x|^ord)^(1/ord) over `dims` (all when empty): ord 2 (the default), 1, 0 (the count of
/// nonzeros), ±inf (the largest or smallest |x|), or any other real. Floating dtypes only;
/// float16 and bfloat16 are accumulated in float32 and rounded once. The ±inf norms of no element
/// are refused, as they have no identity.
Tensor vector_norm(const Tensor& x, double ord = 2, IntArrayRef dims = {}, bool keepdim = false);

}  // namespace tally::linalg
