#pragma once
// Copies that move elements to new places: torch.flip, torch.roll, Tensor.repeat and
// repeat_interleave. flip is an op of its own; the others are composed of views, cat and a copy,
// so the ledger shows the copies they are made of.

#include <optional>

#include "tally/core/tensor.h"

namespace tally {

/// x with the order of its elements reversed along each of `dims` (each named once), as a new
/// tensor: PyTorch has no negative strides, so no view can do it.
Tensor flip(const Tensor& x, IntArrayRef dims);

/// x's elements moved `shifts[i]` places along `dims[i]`, those passing the end coming round to
/// the start (negative shifts move the other way). With no dims, x is rolled as if flattened
/// (one shift), and keeps its shape.
Tensor roll(const Tensor& x, IntArrayRef shifts, IntArrayRef dims = {});

/// x tiled `repeats[i]` times along each dim (Tensor.repeat); more repeats than dims add leading
/// dims: a [2, 3] x repeated {4, 1, 2} is [4, 2, 6].
Tensor repeat(const Tensor& x, IntArrayRef repeats);

/// Each element (each slice along `dim`) repeated `repeats` times in place: [a, b] with 2 gives
/// [a, a, b, b]. Without dim, x is flattened first. (A tensor of per-element repeats is not
/// supported.)
Tensor repeat_interleave(const Tensor& x, int64_t repeats, std::optional<int64_t> dim = std::nullopt);

}  // namespace tally
