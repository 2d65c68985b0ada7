#pragma once
// The GPU parts of `tally info` and `tally bench` (cli/gpu.cpp).

#include <cstdint>
#include <string>

#include "tally/core/device.h"

namespace tally::cli {

/// The GPU section of `tally info` ("none" and why, without one).
void print_gpu_info();
/// `tally bench peak --device cuda`: matmul TFLOP/s per dtype and copy bandwidth, stored.
void run_gpu_peak(const Device& device);
/// `tally bench matmul --device cuda`: FLOPs off the ledger, GPU time, TFLOP/s, MFU.
void run_gpu_matmul(const Device& device, int64_t m, int64_t n, int64_t k, const std::string& dtype, int reps);

}  // namespace tally::cli
