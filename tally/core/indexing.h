#pragma once
// libtorch-style indexing: x.index({0, Slice(1, None, 2), None, Ellipsis, mask}).

#include <cstdint>
#include <limits>
#include <optional>
#include <utility>

#include "tally/core/tensor.h"

namespace tally::indexing {

/// Omitted slice bound, or a new axis when used as an index (Python's None).
inline constexpr std::nullopt_t None = std::nullopt;

/// Python's start:stop:step. Missing bounds mean the whole dimension.
struct Slice {
  Slice(std::optional<int64_t> start = None, std::optional<int64_t> stop = None, std::optional<int64_t> step = None)
      : start(start), stop(stop), step(step) {}
  std::optional<int64_t> start, stop, step;
};

/// Python's `...`: as many full slices as the other indices leave.
struct EllipsisIndexType {};
inline constexpr EllipsisIndexType Ellipsis{};

/// IndexError unless `s` is "...", libtorch's spelling of Ellipsis in an index list (view.cpp).
void check_ellipsis_string(const char* s);

/// One entry of an index list: an integer, a Slice, None (new axis), Ellipsis (or "..."), a
/// bool, which as in PyTorch adds an axis of size 1 (true) or 0 (false) where it stands (x[True]
/// is x[None], not x[1]), or a tensor: int64 positions along one dim, or a bool (or uint8) mask
/// over as many dims as it has (tally/ops/advanced_index.h).
class TensorIndex {
 public:
  enum class Kind : uint8_t { Integer, Slice, None, Ellipsis, Boolean, Tensor };
  TensorIndex(int64_t i) : kind_(Kind::Integer), integer_(i) {}  // NOLINT
  TensorIndex(int i) : kind_(Kind::Integer), integer_(i) {}      // NOLINT
  TensorIndex(bool b) : kind_(Kind::Boolean), integer_(b) {}     // NOLINT
  TensorIndex(Slice s) : kind_(Kind::Slice), slice_(s) {}        // NOLINT
  TensorIndex(std::nullopt_t) : kind_(Kind::None) {}             // NOLINT
  TensorIndex(EllipsisIndexType) : kind_(Kind::Ellipsis) {}      // NOLINT
  TensorIndex(tally::Tensor t) : kind_(Kind::Tensor), tensor_(std::move(t)) {}  // NOLINT
  // Without this, "..." would convert to bool, the pointer being non-null, and add an axis.
  TensorIndex(const char* s) : kind_(Kind::Ellipsis) { check_ellipsis_string(s); }  // NOLINT
  Kind kind() const { return kind_; }
  int64_t integer() const { return integer_; }
  const Slice& slice() const { return slice_; }
  const tally::Tensor& tensor() const { return tensor_; }

 private:
  Kind kind_;
  int64_t integer_ = 0;
  Slice slice_;
  tally::Tensor tensor_;
};

}  // namespace tally::indexing
