#pragma once
// Error checks for the CUDA kernel sources (private to tally/kernels/cuda). A failed CUDA or
// cuBLASLt call throws std::runtime_error naming the call, the library's message and where it
// was made; the library's op layer turns it into its own error type.
//
// Launches are asynchronous, so a fault inside a kernel surfaces at a later call (often the
// next synchronising copy); LAUNCH_CHECK() only catches what the launch itself rejected
// (bad configuration, no kernel image for the device).

#include <cuda_runtime.h>

#include <stdexcept>
#include <string>

namespace tally::kernels::cuda::detail {

[[noreturn]] inline void throw_call_error(const char* call, const char* message, const char* file, int line) {
  throw std::runtime_error(std::string(call) + " failed: " + message + " (" + file + ":" + std::to_string(line) + ")");
}

}  // namespace tally::kernels::cuda::detail

#define CUDA_CHECK(call)                                                                              \
  do {                                                                                                \
    const cudaError_t tally_err_ = (call);                                                            \
    if (tally_err_ != cudaSuccess)                                                                    \
      ::tally::kernels::cuda::detail::throw_call_error(#call, cudaGetErrorString(tally_err_), __FILE__, __LINE__); \
  } while (0)

// Needs cublasLt.h included before use.
#define CUBLAS_CHECK(call)                                                                            \
  do {                                                                                                \
    const cublasStatus_t tally_st_ = (call);                                                          \
    if (tally_st_ != CUBLAS_STATUS_SUCCESS)                                                           \
      ::tally::kernels::cuda::detail::throw_call_error(#call, cublasLtGetStatusString(tally_st_), __FILE__, __LINE__); \
  } while (0)

/// After each <<<...>>>: the launch's own errors (bad grid, missing sm image).
#define LAUNCH_CHECK() CUDA_CHECK(cudaGetLastError())
