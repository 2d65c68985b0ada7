#pragma once
// Factory functions: zeros, ones, full, arange, linspace, logspace, eye, tensor(...), *_like, and
// empty (core/empty.h, which the layers below ops use alone). Each takes TensorOptions (a dtype, a
// device, or both), as libtorch's do.

#include <initializer_list>
#include <optional>
#include <vector>

#include "tally/core/empty.h"
#include "tally/core/tensor.h"
#include "tally/core/tensor_options.h"

namespace tally {

/// Zeros.
Tensor zeros(IntArrayRef sizes, TensorOptions options = {});
/// Ones.
Tensor ones(IntArrayRef sizes, TensorOptions options = {});
/// Every element `value`; the dtype defaults to the value's (bool, int64 or float32).
Tensor full(IntArrayRef sizes, Scalar value, TensorOptions options = {});
/// empty() with t's sizes and (unless given) dtype and device, laid out as `memory_format` says:
/// by default (Preserve) as t is, as in PyTorch (core/memory_format.h).
Tensor empty_like(const Tensor& t, TensorOptions options = {}, std::optional<MemoryFormat> memory_format = std::nullopt);
/// zeros() like t, as empty_like.
Tensor zeros_like(const Tensor& t, TensorOptions options = {}, std::optional<MemoryFormat> memory_format = std::nullopt);
/// ones() like t, as empty_like.
Tensor ones_like(const Tensor& t, TensorOptions options = {}, std::optional<MemoryFormat> memory_format = std::nullopt);
/// full() like t, as empty_like.
Tensor full_like(const Tensor& t, Scalar value, TensorOptions options = {}, std::optional<MemoryFormat> memory_format = std::nullopt);
/// 0, 1, ..., end-1 (int64 for integer arguments, float32 otherwise).
Tensor arange(Scalar end, TensorOptions options = {});
/// start, start+step, ... < end.
Tensor arange(Scalar start, Scalar end, Scalar step = 1, TensorOptions options = {});
/// `steps` evenly spaced values from start to end, both included (float32 unless options say).
Tensor linspace(Scalar start, Scalar end, int64_t steps, TensorOptions options = {});
/// base^x for `steps` evenly spaced x from start to end (float32 unless options say).
Tensor logspace(Scalar start, Scalar end, int64_t steps, double base = 10.0, TensorOptions options = {});
/// n×m identity (m defaults to n).
Tensor eye(int64_t n, std::optional<int64_t> m = std::nullopt, TensorOptions options = {});
/// A 0-d tensor holding `value`.
Tensor scalar_tensor(Scalar value, TensorOptions options = {});
/// A number joining an op on `like` as a 0-d tensor of `dtype` (PyTorch's wrapped number): on
/// the CPU, which any device's op accepts (Note [Devices] in ops/apply.h), except with a meta
/// tensor, where it is a meta tensor too, so a meta run counts the bytes a real run holds.
Tensor wrapped_number(Scalar value, Dtype dtype, const Tensor& like);

/// A nested list of numbers for tally::tensor: {{1., 2, 3}, {4, 5, 6}}. A leaf keeps its number
/// as a Scalar, so an int64 past 2^53 stays exact.
class NestedList {
 public:
  NestedList(double v) : value_(v) {}    // NOLINT
  NestedList(float v) : value_(v) {}     // NOLINT
  NestedList(int v) : value_(v) {}       // NOLINT
  NestedList(int64_t v) : value_(v) {}   // NOLINT
  NestedList(bool v) : value_(v) {}      // NOLINT
  NestedList(std::initializer_list<NestedList> items) : items_(items), is_list_(true) {}  // NOLINT
  /// Leaf value.
  const Scalar& value() const { return value_; }
  /// Leaf kind.
  Scalar::Kind kind() const { return value_.kind(); }
  /// Children, when a list.
  const std::vector<NestedList>& items() const { return items_; }
  /// Whether this is a list (possibly empty) rather than a number.
  bool is_list() const { return is_list_; }

 private:
  Scalar value_;
  std::vector<NestedList> items_;
  bool is_list_ = false;
};

/// A tensor from nested lists; dtype float32 if any number is floating, else int64, else bool
/// (as torch.tensor infers it), unless given.
Tensor tensor(const NestedList& data, TensorOptions options = {});

}  // namespace tally
