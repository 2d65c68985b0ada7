#pragma once
// Private helpers of tally/cuda: the stream ops use. Failed CUDA
// calls are checked with CUDA_CHECK from tally/kernels/cuda/check.h, as in the kernels.

#include <cuda_runtime.h>

#include "tally/kernels/cuda/check.h"

namespace tally::cuda::detail {

/// The stream tally queues `device`'s work on (today the legacy default stream, as PyTorch's
/// default; the allocator keys its cache by it, Note [CUDA caching allocator]).
inline cudaStream_t current_stream(int) { return nullptr; }

}  // namespace tally::cuda::detail
