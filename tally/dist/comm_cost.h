#pragma once
// What a collective costs one rank, by the bandwidth-optimal algorithms' counts (ring or
// equivalent; NCCL's "bus bytes"): the bytes it sends, which equal the bytes it receives, and the
// additions a reduction does on it. Every collective's ledger row and the data-parallel trainer's
// books come from here.
//
// A reduction of n elements over p ranks works on p slices of ⌈n/p⌉ elements (the last padded),
// so an all-reduce of S bytes, S a multiple of p elements, moves exactly 2·(p−1)/p·S each way.

#include <cstdint>

#include "tally/ops/cost.h"

namespace tally::dist {

/// ⌈numel / p⌉: the slice each rank reduces.
inline int64_t slice_numel(int64_t numel, int p) { return (numel + p - 1) / p; }

/// An all-reduce of `numel` elements of `element_bytes`: 2·(p−1) slices each way (reduce-scatter,
/// then all-gather); (p−1) slices' additions.
inline ops::Cost allreduce_cost(int64_t numel, int64_t element_bytes, int p) {
  const int64_t slice = slice_numel(numel, p), moved = 2 * (p - 1) * slice * element_bytes;
  return {.flops = (p - 1) * slice, .bytes_read = 0, .bytes_written = 0, .bytes_sent = moved, .bytes_received = moved};
}
/// A reduce-scatter whose input has `input_numel` elements (p slices): p−1 slices each way and
/// their additions.
inline ops::Cost reduce_scatter_cost(int64_t input_numel, int64_t element_bytes, int p) {
  const int64_t slice = input_numel / p, moved = (p - 1) * slice * element_bytes;
  return {.flops = (p - 1) * slice, .bytes_read = 0, .bytes_written = 0, .bytes_sent = moved, .bytes_received = moved};
}
/// An all-gather, or an all-to-all, over `numel` elements in all (p slices): p−1 slices each way.
inline ops::Cost gather_cost(int64_t numel, int64_t element_bytes, int p) {
  const int64_t moved = (p - 1) * (numel / p) * element_bytes;
  return {.flops = 0, .bytes_read = 0, .bytes_written = 0, .bytes_sent = moved, .bytes_received = moved};
}
/// A broadcast of `bytes` (pipelined): every rank but the root receives them, every rank but the
/// last in the chain sends them; counted as both, for each rank.
inline ops::Cost broadcast_cost(int64_t bytes, int p) {
  const int64_t moved = p > 1 ? bytes : 0;
  return {.flops = 0, .bytes_read = 0, .bytes_written = 0, .bytes_sent = moved, .bytes_received = moved};
}

}  // namespace tally::dist
