#pragma once
// Measured ceilings of this machine: the FMA, bf16 dot-product and AMX peaks and the STREAM memory
// bandwidths. These are the "measured" peaks that MFU and the roofline can be quoted against, beside the promised ones.

#include <cstdint>

namespace tally::machine {

/// Float32 FLOP/s from 24 independent FMA chains per thread (zmm if AVX-512, else ymm) on
/// `threads` threads: the best lock-stepped ~1 ms window over about `seconds`, after a warm-up.
double measure_fma_peak_flops(int threads, double seconds);

/// bfloat16 FLOP/s from vdpbf16ps chains (16 float lanes, each adding a 2-element bf16 dot
/// product), measured like measure_fma_peak_flops. NotImplementedError without AVX512_BF16.
double measure_bf16_dot_peak_flops(int threads, double seconds);

/// bfloat16 FLOP/s from AMX tdpbf16ps tile products (16x16x32 multiply-adds each, six independent
/// accumulator tiles per thread), measured like measure_fma_peak_flops. Asks Linux for AMX tile
/// state first (Note [AMX tile permission]). NotImplementedError without AMX-BF16 or that permission;
/// no tile instruction runs then.
double measure_amx_bf16_peak_flops(int threads, double seconds);

/// STREAM-style bandwidths in bytes/s (bytes read + bytes written, write-allocate traffic not
/// counted), best of the repetitions.
struct StreamResult {
  /// sum += a[i]: 1 array read.
  double read_bytes_per_sec;
  /// c[i] = a[i]: 1 read, 1 write.
  double copy_bytes_per_sec;
  /// b[i] = s * c[i]: 1 read, 1 write.
  double scale_bytes_per_sec;
  /// c[i] = a[i] + b[i]: 2 reads, 1 write.
  double add_bytes_per_sec;
  /// a[i] = b[i] + s * c[i]: 2 reads, 1 write.
  double triad_bytes_per_sec;
};

/// Runs the five STREAM kernels over three double arrays of `bytes_per_array` each on `threads`
/// threads; use >= 256 MiB per array to measure DRAM rather than the last-level cache.
StreamResult measure_stream(int64_t bytes_per_array, int threads, int reps = 5);

/// Triad bandwidth alone (bytes/s), as measure_stream reports it.
double measure_stream_triad_bytes_per_sec(int64_t bytes_per_array, int threads);

}  // namespace tally::machine
