#pragma once
// Error checks for the CUDA sources (the kernels here and the runtime in tally/cuda). A failed
// CUDA or cuBLASLt call raises, through kernels::cuda::raise_error (tally::DeviceError), naming
// the call, the library's message and where it was made.
//
// Launches are asynchronous, so a fault inside a kernel surfaces at a later call (often the
// next synchronising copy); LAUNCH_CHECK() only catches what the launch itself rejected
// (bad configuration, no kernel image for the device).

#include <cuda_runtime.h>

#include <string>

#include "tally/kernels/cuda/kernels.h"

namespace tally::kernels::cuda::detail {

[[noreturn]] inline void throw_call_error(const char* call, const char* message, const char* file, int line) {
  raise_error(std::string("CUDA error: ") + call + " failed: " + message + " (" + file + ":" + std::to_string(line) + ")");
}

}  // namespace tally::kernels::cuda::detail

#define CUDA_CHECK(call)                                                                              \
  do {                                                                                                \
    const cudaError_t tally_err_ = (call);                                                            \
    if (tally_err_ != cudaSuccess) {                                                                  \
      cudaGetLastError(); /* clear a non-sticky error so the next call starts clean */                \
      ::tally::kernels::cuda::detail::throw_call_error(#call, cudaGetErrorString(tally_err_), __FILE__, __LINE__); \
    }                                                                                                 \
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
