#pragma once
// Private helpers of tally/cuda: error checks, the current-device guard and the stream ops use.

#include <cuda_runtime.h>

#include "tally/error/error.h"

namespace tally::cuda::detail {

/// Raise DeviceError naming the failed call and CUDA's own message.
[[noreturn]] void raise_cuda_error(cudaError_t err, const char* call, const char* file, int line);

#define TALLY_CUDA_CHECK(call)                                                                  \
  do {                                                                                          \
    cudaError_t tally_cuda_err_ = (call);                                                       \
    if (tally_cuda_err_ != cudaSuccess) [[unlikely]]                                            \
      ::tally::cuda::detail::raise_cuda_error(tally_cuda_err_, #call, __FILE__, __LINE__);      \
  } while (0)

/// Makes `device` current for a scope and restores the previous one.
class DeviceGuard {
 public:
  explicit DeviceGuard(int device);
  ~DeviceGuard();
  DeviceGuard(const DeviceGuard&) = delete;
  DeviceGuard& operator=(const DeviceGuard&) = delete;

 private:
  int previous_ = -1;
};

/// The stream tally queues `device`'s work on (today the legacy default stream, as PyTorch's
/// default; the allocator keys its cache by it, Note [CUDA caching allocator]).
inline cudaStream_t current_stream(int) { return nullptr; }

}  // namespace tally::cuda::detail
